// Package scheduler decides where task groups run (docs/scheduling.md). It keeps an in-memory
// Snapshot of nodes and placed task groups and places the instances of applications in
// batches with BCS's semantics: node readiness and taints, constraints (AND over
// intersectionItem, OR over unionData; UNIQUE, MAXPER, CLUSTER, LIKE, UNLIKE, GROUPBY,
// EXCLUDE, GREATER, TOLERATION), resources plus executor overhead, fixed and random host
// ports and extended resources; then spread (default) or binpack scoring.
//
// The package does no I/O: the server feeds the snapshot from store watches, and plans
// run the same code on a clone.
package scheduler
