package agent

import (
	"context"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
)

// The node's GPUs (docs/gpus.md) are devices/gpu.Manager's: the agent makes it, hands it
// to the executor, registers the node again when the cards change, and marks the task
// groups that hold them.

// GPU modes (Config.GPUs).
const (
	GPUAuto = gpu.ModeAuto // the cards NVML finds; none without the library
	GPUOff  = gpu.ModeOff  // report no cards
)

// GPU sharing modes (Config.GPUSharing).
const (
	GPUSharingMPS   = gpu.SharingMPS
	GPUSharingVCUDA = gpu.SharingVCUDA
	GPUSharingHAMi  = gpu.SharingHAMi
	GPUSharingNone  = gpu.SharingNone
)

// openGPUs makes the GPU manager, and serves again the shares a previous agent started
// (the checkpoint).
func (a *Agent) openGPUs() *gpu.Manager {
	opts := gpu.Options{Mode: a.cfg.GPUs, Source: a.cfg.GPUSource, Sharing: a.cfg.GPUSharing,
		HAMiLib: a.cfg.HAMiLib, VCUDADriverDir: a.cfg.VCUDADriverDir, DataDir: a.cfg.DataDir,
		Changed: a.nodeChanged, Logger: a.log}
	if p, ok := a.drivers[driver.KindDocker].(driver.Processes); ok {
		opts.PIDs = p
	}
	m := gpu.NewManager(opts)
	for _, key := range a.ckpt.keys() {
		e, _ := a.ckpt.get(key)
		for _, g := range e.GPUs {
			m.Restore(executor.TaskID(e.Namespace, e.Name, g.Task), key, e.GPUSharing, g)
		}
	}
	return m
}

// runGPUs watches the cards until ctx ends.
func (a *Agent) runGPUs(ctx context.Context) {
	if err := a.gpus.Run(ctx); err != nil {
		a.log.Error("cannot watch the node's GPUs", "err", err)
	}
}

// releaseGPUs ends the shares of a removed task group's tasks.
func (a *Agent) releaseGPUs(e checkpointEntry) {
	for _, g := range e.GPUs {
		a.gpus.Release(executor.TaskID(e.Namespace, e.Name, g.Task), e.GPUSharing)
	}
}

// nodeChanged asks reregisterLoop to register the node again.
func (a *Agent) nodeChanged() {
	select {
	case a.nodeChanges <- struct{}{}:
	default: // one is pending: it reads the node as it is then
	}
}

// reregisterLoop registers the node again after its cards or device plugins changed,
// and marks the task groups whose cards did.
func (a *Agent) reregisterLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.nodeChanges:
		}
		if !a.register(ctx) {
			return
		}
		a.markGPUTaskGroups()
	}
}

// markGPUTaskGroups reports again the task groups that hold a card, so their status
// carries the cards' state (reportTaskGroup adds it).
func (a *Agent) markGPUTaskGroups() {
	a.mu.Lock()
	var held []*v4.TaskGroup
	for _, tg := range a.desired {
		if len(tg.Spec.GPUs) > 0 {
			held = append(held, tg)
		}
	}
	a.mu.Unlock()
	for _, tg := range held {
		ns, name := tg.Metadata.Namespace, tg.Metadata.Name
		if st, known := a.exec.Status(ns, name); known {
			a.reportTaskGroup(ns, name, st)
		}
	}
}

// reportTaskGroup queues a task group's status, with the state of its cards.
func (a *Agent) reportTaskGroup(ns, name string, st v4.TaskGroupStatus) {
	if st.Reason == v4.ReasonPortConflict {
		a.busyPorts.taken(st.PortsTaken) // the scheduler must hear of them before the next read
	}
	a.metrics.reported(tgKey(ns, name), st.Phase)
	a.reporter.enqueue(ns, name, a.withGPUState(ns, name, st))
}

// withGPUState sets the status's GPUProblem from the cards the task group holds.
func (a *Agent) withGPUState(ns, name string, st v4.TaskGroupStatus) v4.TaskGroupStatus {
	if a.gpus == nil {
		return st
	}
	a.mu.Lock()
	tg := a.desired[tgKey(ns, name)]
	a.mu.Unlock()
	if tg != nil {
		st.GPUProblem = a.gpus.Problem(tg)
	}
	return st
}
