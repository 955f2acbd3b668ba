// Package podbench measures how long pods take to start on the real container runtimes
// (Docker and containerd), side by side in one run: a pod of one main container against
// the same with a sidecar and two init tasks, and a pod of ten containers
// (docs/benchmarks.md, "Pod start"). It holds no code but its benchmarks, which skip
// without root, Docker or containerd.
package podbench
