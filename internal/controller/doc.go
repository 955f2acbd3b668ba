// Package controller holds the leader-only loops of the server (docs/ha.md, The leader).
// The application controller keeps every application and process at its instance count:
// it places missing instances through the scheduler and writes their task groups, applies
// the restart policy to task groups that end, scales, tears down deleted applications and
// aggregates their status. The daemonset controller keeps one task group of every
// daemonset on each eligible node, following node joins and leaves. The notify controller
// POSTs callbacks for the warnings notify objects subscribe to. The dependency controller
// runs deployd-style dependency pods: one per node (or per namespace on a node) while task
// groups there declare them, collected DependencyGC after the last one went. The job
// controller runs jobs to completion: task groups up to the job's parallelism, failed
// ones retried until its backoffLimit (docs/jobs.md). The cron controller starts the
// jobs of cronjobs and the workflows of cronworkflows on schedule, each scheduled time
// at most once (docs/cron.md). Only the server elected leader through etcd runs them.
package controller
