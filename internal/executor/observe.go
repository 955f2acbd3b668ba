package executor

import (
	"time"

	"github.com/berthhq/berth/internal/executor/health"
)

// Observer is told what the executor does, for the node's metrics (the agent's). Its
// methods are called from the pods' goroutines and must not block.
type Observer interface {
	// TaskStarted is one driver start of a task: how long it took and how it ended.
	TaskStarted(driver string, took time.Duration, err error)
	// TaskStopped is one driver stop of a task (a kill, a scale-down, an ending pod):
	// how long it took and how it ended (a task already gone is a stop that succeeded).
	TaskStopped(driver string, took time.Duration, err error)
	// DriverError is a driver call other than a start or a stop that failed: op is
	// "wait" (the executor falls back to polling) or "remove".
	DriverError(driver, op string)
	// HealthChecked is one result of a task's local health check of a type (HTTP, TCP,
	// COMMAND).
	HealthChecked(check string, r health.Result)
}

// noObserver is the Observer of an executor given none.
type noObserver struct{}

func (noObserver) TaskStarted(string, time.Duration, error) {}
func (noObserver) TaskStopped(string, time.Duration, error) {}
func (noObserver) DriverError(string, string)               {}
func (noObserver) HealthChecked(string, health.Result)      {}

// observer returns the configured Observer, or one that does nothing.
func (e *Executor) observer() Observer {
	if e.cfg.Observer == nil {
		return noObserver{}
	}
	return e.cfg.Observer
}

// driverName names a task's driver in metrics.
func (tp *taskPlan) driverName() string {
	if tp.container != nil {
		return "docker"
	}
	return "process"
}
