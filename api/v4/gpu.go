package v4

import (
	"fmt"
	"math"
)

// GPU resources, as gpu-manager's users write them (docs/gpus.md): whole cards, or a
// share of one card in hundredths of its cores with its memory in 256 MiB units. They are
// extended resources of a container or a process.
const (
	// ResourceGPU asks for whole cards.
	ResourceGPU = "nvidia.com/gpu"
	// ResourceVCUDACore asks for 1-99 hundredths of one card, or a multiple of 100 for
	// whole cards.
	ResourceVCUDACore = "tencent.com/vcuda-core"
	// ResourceVCUDAMemory asks for the card memory of a share, in VCUDAMemoryUnit.
	ResourceVCUDAMemory = "tencent.com/vcuda-memory"
)

// VCUDAMemoryUnit is the size of one vcuda-memory unit in MiB.
const VCUDAMemoryUnit = 256

// CoresPerGPU is how many vcuda-core one card has.
const CoresPerGPU = 100

// MaxGPUsPerTask bounds the cards one task may ask for.
const MaxGPUsPerTask = 64

// maxGPUValue bounds the GPU resources' values: 64 cards in hundredths, or 1 TiB of
// card memory in 256 MiB units, well above both.
const maxGPUValue = 1 << 16

// GPURequest is what one task asks of GPUs: Cards whole cards, or (Cards 0) Cores
// hundredths of one card with MemoryMiB of its memory.
type GPURequest struct {
	Cards     int
	Cores     int
	MemoryMiB int
}

// IsZero reports a task that asks for no GPU.
func (g GPURequest) IsZero() bool { return g == GPURequest{} }

// Fractional reports a share of one card.
func (g GPURequest) Fractional() bool { return g.Cards == 0 && g.Cores > 0 }

// GPURequestOf reads a task's GPU request from its extended resources (validated:
// validateGPU has accepted them).
func GPURequestOf(r *Resources) GPURequest {
	var g GPURequest
	if r == nil {
		return g
	}
	for _, e := range r.ExtendedResources {
		switch e.Name {
		case ResourceGPU:
			g.Cards += int(e.Value)
		case ResourceVCUDACore:
			cores := int(e.Value)
			if cores >= CoresPerGPU {
				g.Cards += cores / CoresPerGPU
			} else {
				g.Cores += cores
			}
		case ResourceVCUDAMemory:
			g.MemoryMiB += int(e.Value) * VCUDAMemoryUnit
		}
	}
	if g.Cards > 0 { // whole cards come with all their memory
		g.Cores, g.MemoryMiB = 0, 0
	}
	return g
}

// validateGPU checks a task's GPU resources: whole numbers, cards asked one way, a share
// below one card with its memory, several cards in whole hundreds.
func validateGPU(p string, r *Resources, errs *FieldErrors) {
	at := map[string]int{}
	for i, e := range r.ExtendedResources {
		switch e.Name {
		case ResourceGPU, ResourceVCUDACore, ResourceVCUDAMemory:
		default:
			continue
		}
		ep := fmt.Sprintf("%s.extendedResources[%d]", p, i)
		if prev, dup := at[e.Name]; dup {
			errs.add(ep+".name", "%s is listed twice (also extendedResources[%d])", e.Name, prev)
			continue
		}
		at[e.Name] = i
		if e.Value != math.Trunc(e.Value) || e.Value > maxGPUValue {
			errs.add(ep+".value", "%s must be a whole number of at most %d, got %g", e.Name, maxGPUValue, e.Value)
		}
	}
	value := func(name string) (int, bool) {
		i, ok := at[name]
		if !ok {
			return 0, false
		}
		return int(r.ExtendedResources[i].Value), true
	}
	path := func(name string) string { return fmt.Sprintf("%s.extendedResources[%d].value", p, at[name]) }
	cards, hasCards := value(ResourceGPU)
	cores, hasCores := value(ResourceVCUDACore)
	_, hasMem := value(ResourceVCUDAMemory)
	switch {
	case hasCards && (hasCores || hasMem):
		errs.add(fmt.Sprintf("%s.extendedResources[%d].name", p, at[ResourceGPU]),
			"%s and %s/%s ask for cards two ways: use one", ResourceGPU, ResourceVCUDACore, ResourceVCUDAMemory)
	case hasCards && cards > MaxGPUsPerTask:
		errs.add(path(ResourceGPU), "at most %d cards per task, got %d", MaxGPUsPerTask, cards)
	case hasMem && !hasCores:
		errs.add(path(ResourceVCUDAMemory), "a share of a card's memory needs %s too (the share of its cores, 1-99)", ResourceVCUDACore)
	case hasCores && cores > CoresPerGPU && cores%CoresPerGPU != 0:
		errs.add(path(ResourceVCUDACore), "above %d, %s asks for whole cards and must be a multiple of %d (a share never spans cards), got %d",
			CoresPerGPU, ResourceVCUDACore, CoresPerGPU, cores)
	case hasCores && cores/CoresPerGPU > MaxGPUsPerTask:
		errs.add(path(ResourceVCUDACore), "at most %d cards (%d) per task, got %d", MaxGPUsPerTask, MaxGPUsPerTask*CoresPerGPU, cores)
	case hasCores && cores < CoresPerGPU && !hasMem:
		errs.add(path(ResourceVCUDACore), "a share of a card (%d of %d) needs %s too: how much of its memory, in %d MiB units",
			cores, CoresPerGPU, ResourceVCUDAMemory, VCUDAMemoryUnit)
	}
}
