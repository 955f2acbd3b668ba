package v4

import (
	"fmt"
	"regexp"
)

// A node's GPUs, as its agent fingerprints them (docs/gpus.md, "Cards"): the scheduler
// accounts for every card's cores and memory and picks the cards of each task.

// GPU link levels between two cards of a node, best first: how close their
// interconnect is. Multi-card requests take the set whose worst link is best.
const (
	// GPULinkNVLink: the cards share an NVLink.
	GPULinkNVLink = "nvlink"
	// GPULinkPCIeSwitch: the cards sit behind the same PCIe switch (one or several).
	GPULinkPCIeSwitch = "pcie-switch"
	// GPULinkCPU: the cards hang off the same CPU (host bridge or NUMA node).
	GPULinkCPU = "cpu"
	// GPULinkCrossCPU: traffic between the cards crosses the CPU interconnect.
	GPULinkCrossCPU = "cross-cpu"
)

// GPULinkRank orders link levels: 1 is the best (NVLink), 4 the worst; an unknown level
// ranks as the worst.
func GPULinkRank(level string) int {
	switch level {
	case GPULinkNVLink:
		return 1
	case GPULinkPCIeSwitch:
		return 2
	case GPULinkCPU:
		return 3
	}
	return 4
}

// MaxGPUsPerNode bounds the cards one node may report.
const MaxGPUsPerNode = 64

// maxGPUTextLen bounds a card's model, PCI address and health message.
const maxGPUTextLen = 256

// NodeGPU is one card of a node.
type NodeGPU struct {
	// UUID is NVML's card UUID ("GPU-..."), what NVIDIA_VISIBLE_DEVICES names.
	UUID string `json:"uuid"`
	// Index is NVML's index; Minor the card's /dev/nvidia<minor>.
	Index int    `json:"index"`
	Minor int    `json:"minor"`
	Model string `json:"model"`
	// MemoryMiB is the card's memory.
	MemoryMiB int `json:"memoryMiB"`
	// PCIBusID is the card's PCI address ("0000:07:00.0").
	PCIBusID string `json:"pciBusID,omitempty"`
	// NUMANode is the NUMA node of the card's PCI device, -1 when unknown.
	NUMANode int `json:"numaNode"`
	// MIG reports MIG mode on: the card is given out whole only.
	MIG bool `json:"mig,omitempty"`
	// Links are this card's links to the node's other cards.
	Links []GPULink `json:"links,omitempty"`
	// Unhealthy, when set, says why the card takes no new work (an XID error, the card
	// gone); its task groups are marked.
	Unhealthy string `json:"unhealthy,omitempty"`
}

// GPULink is the link from one card to another card of the same node.
type GPULink struct {
	UUID  string `json:"uuid"`
	Level string `json:"level"`
}

// gpuUUIDPattern is a card UUID as NVML writes it (and what a test may make up).
var gpuUUIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// validateNodeGPUs checks an agent's GPU inventory: bounded, unique UUIDs and indexes,
// links to cards of the same node at known levels.
func validateNodeGPUs(path string, gpus []NodeGPU, errs *FieldErrors) {
	if len(gpus) > MaxGPUsPerNode {
		errs.add(path, "at most %d cards per node, got %d", MaxGPUsPerNode, len(gpus))
		return
	}
	uuids := make(map[string]int, len(gpus))
	indexes := make(map[int]int, len(gpus))
	for i, g := range gpus {
		p := indexPath(path, i)
		switch {
		case !gpuUUIDPattern.MatchString(g.UUID):
			errs.add(p+".uuid", "must be 1-128 letters, digits, '.', '_', ':' or '-', got %q", truncate(g.UUID, 80))
		default:
			if prev, dup := uuids[g.UUID]; dup {
				errs.add(p+".uuid", "%s is also %s", g.UUID, indexPath(path, prev))
			}
			uuids[g.UUID] = i
		}
		if prev, dup := indexes[g.Index]; dup {
			errs.add(p+".index", "%d is also the index of %s", g.Index, indexPath(path, prev))
		}
		indexes[g.Index] = i
		if g.Index < 0 || g.Minor < 0 {
			errs.add(p, "index and minor must not be negative, got %d and %d", g.Index, g.Minor)
		}
		if g.MemoryMiB <= 0 || g.MemoryMiB > maxGPUValue*VCUDAMemoryUnit {
			errs.add(p+".memoryMiB", "must be 1-%d, got %d", maxGPUValue*VCUDAMemoryUnit, g.MemoryMiB)
		}
		if g.NUMANode < -1 {
			errs.add(p+".numaNode", "must be -1 (unknown) or a NUMA node, got %d", g.NUMANode)
		}
		for _, f := range []struct{ name, v string }{{"model", g.Model}, {"pciBusID", g.PCIBusID}, {"unhealthy", g.Unhealthy}} {
			if len(f.v) > maxGPUTextLen {
				errs.add(p+"."+f.name, "must be at most %d characters", maxGPUTextLen)
			}
		}
		if len(g.Links) > MaxGPUsPerNode {
			errs.add(p+".links", "at most %d links, got %d", MaxGPUsPerNode, len(g.Links))
		}
	}
	for i, g := range gpus {
		if len(g.Links) > MaxGPUsPerNode {
			continue
		}
		for j, l := range g.Links {
			lp := fmt.Sprintf("%s.links[%d]", indexPath(path, i), j)
			if _, ok := uuids[l.UUID]; !ok || l.UUID == g.UUID {
				errs.add(lp+".uuid", "must be another card of this node, got %q", truncate(l.UUID, 80))
			}
			oneOf(lp+".level", l.Level, errs, GPULinkNVLink, GPULinkPCIeSwitch, GPULinkCPU, GPULinkCrossCPU)
		}
	}
}

// TaskGPU is a card, or a share of one, the scheduler gave to one task of a task group.
type TaskGPU struct {
	// Task is the container's or process's name.
	Task string `json:"task"`
	// UUID and Index name the card on the task group's node.
	UUID  string `json:"uuid"`
	Index int    `json:"index"`
	// Cores is the share in hundredths (100 for a whole card); MemoryMiB the card memory
	// it may use (all of it for a whole card).
	Cores     int `json:"cores"`
	MemoryMiB int `json:"memoryMiB"`
}

// Whole reports a whole card.
func (t TaskGPU) Whole() bool { return t.Cores >= CoresPerGPU }

// validateTaskGPUs checks the cards recorded on a task group: bounded, a share of
// 1-100 hundredths of a named card for a named task.
func validateTaskGPUs(path string, gpus []TaskGPU, errs *FieldErrors) {
	if len(gpus) > MaxGPUsPerNode {
		errs.add(path, "at most %d cards per task group, got %d", MaxGPUsPerNode, len(gpus))
		return
	}
	for i, g := range gpus {
		p := indexPath(path, i)
		if g.Task == "" {
			errs.add(p+".task", "required")
		}
		if !gpuUUIDPattern.MatchString(g.UUID) {
			errs.add(p+".uuid", "must be a card UUID, got %q", truncate(g.UUID, 80))
		}
		if g.Cores < 1 || g.Cores > CoresPerGPU {
			errs.add(p+".cores", "must be 1-%d, got %d", CoresPerGPU, g.Cores)
		}
		if g.MemoryMiB < 0 || g.Index < 0 {
			errs.add(p, "index and memoryMiB must not be negative, got %d and %d", g.Index, g.MemoryMiB)
		}
	}
}
