package server

import (
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/scheduler"
)

// checkGPUShares refuses a workload whose share of a card asks for more card memory than
// any card of the cluster has (docs/gpus.md): it would never be placed. The spec library
// checks the request alone; only the cluster knows its cards. A cluster without cards yet,
// or a scheduler that has not loaded them, refuses nothing: `berth plan` explains.
func (s *Server) checkGPUShares(obj v4.Object) error {
	pod := v4.PodSpecOf(obj)
	if pod == nil || s.feed == nil {
		return nil
	}
	type ask struct {
		path string
		mem  int
	}
	var asks []ask
	add := func(path string, r *v4.Resources) {
		g := v4.GPURequestOf(r)
		if !g.Fractional() {
			return
		}
		for i, e := range r.ExtendedResources {
			if e.Name == v4.ResourceVCUDAMemory {
				asks = append(asks, ask{fmt.Sprintf("%s.resources.extendedResources[%d].value", path, i), g.MemoryMiB})
			}
		}
	}
	for i := range pod.Containers {
		add(fmt.Sprintf("spec.template.spec.containers[%d]", i), pod.Containers[i].Resources)
	}
	for i := range pod.Processes {
		add(fmt.Sprintf("spec.template.spec.processes[%d]", i), pod.Processes[i].Resources)
	}
	if len(asks) == 0 {
		return nil
	}
	select {
	case <-s.feed.Synced():
	default:
		return nil
	}
	var largest int
	var anyCards bool
	s.feed.With(func(snap *scheduler.Snapshot) { largest, anyCards = snap.LargestShareableGPU() })
	if !anyCards {
		return nil
	}
	var fe v4.FieldErrors
	for _, a := range asks {
		if a.mem > largest {
			fe = append(fe, v4.FieldError{Field: a.path, Message: fmt.Sprintf(
				"a share of one card with %d MiB of its memory: the largest card of the cluster that takes shares has %d MiB", a.mem, largest)})
		}
	}
	return httpapi.InvalidObject(obj, fe)
}
