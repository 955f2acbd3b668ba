//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	v4 "github.com/berthhq/berth/api/v4"
)

// NVML reads cards through the NVIDIA Management Library.
type NVML struct {
	lib   nvml.Interface
	sysfs string
}

// OpenNVML loads and initialises NVML: lib is nvml.New() unless a test gives a mock;
// sysfs is where NUMA nodes are read ("/sys"). It returns ErrNoLibrary where the library
// is not installed.
func OpenNVML(lib nvml.Interface, sysfs string) (*NVML, error) {
	if lib == nil {
		lib = nvml.New()
	}
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, ErrNoLibrary
	default:
		return nil, fmt.Errorf("initialise NVML: %w", ret)
	}
	return &NVML{lib: lib, sysfs: sysfs}, nil
}

// Close shuts NVML down.
func (n *NVML) Close() error {
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("shut NVML down: %w", ret)
	}
	return nil
}

// card is one device as NVML gives it, with the PCI address its links name.
type card struct {
	dev   nvml.Device
	busID string // NVML's form, upper case
	gpu   v4.NodeGPU
}

// Cards fingerprints every card. A card NVML has lost is reported unhealthy rather
// than left out, so its task groups are marked.
func (n *NVML) Cards() ([]v4.NodeGPU, error) {
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("count the GPUs: %w", ret)
	}
	cards := make([]*card, 0, count)
	for i := range min(count, v4.MaxGPUsPerNode) {
		dev, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d: %w", i, ret)
		}
		c, err := n.describe(i, dev)
		if err != nil {
			return nil, err
		}
		cards = append(cards, c)
	}
	linkCards(cards)
	out := make([]v4.NodeGPU, len(cards))
	for i, c := range cards {
		out[i] = c.gpu
	}
	return out, nil
}

// describe reads one card. What a card does not support (MIG, a PCI address) is left
// at its zero value; a lost card is marked.
func (n *NVML) describe(index int, dev nvml.Device) (*card, error) {
	uuid, ret := dev.GetUUID()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("GPU %d: UUID: %w", index, ret)
	}
	g := v4.NodeGPU{UUID: uuid, Index: index, Minor: index, NUMANode: -1}
	lost := func(what string, ret nvml.Return) {
		if ret == nvml.ERROR_GPU_IS_LOST && g.Unhealthy == "" {
			g.Unhealthy = "NVML lost the card (" + what + ")"
		}
	}
	if name, ret := dev.GetName(); ret == nvml.SUCCESS {
		g.Model = name
	} else {
		lost("name", ret)
	}
	if minor, ret := dev.GetMinorNumber(); ret == nvml.SUCCESS {
		g.Minor = minor
	} else {
		lost("minor number", ret)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemoryMiB = int(mem.Total >> 20)
	} else {
		lost("memory", ret)
	}
	if g.MemoryMiB <= 0 {
		g.MemoryMiB = 1 // a card must have memory to be valid; a lost one takes nothing anyway
		if g.Unhealthy == "" {
			g.Unhealthy = "NVML reports no memory"
		}
	}
	if cur, _, ret := dev.GetMigMode(); ret == nvml.SUCCESS {
		g.MIG = cur == nvml.DEVICE_MIG_ENABLE
	} else {
		lost("MIG mode", ret)
	}
	c := &card{dev: dev, gpu: g}
	if pci, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
		c.busID = strings.ToUpper(cString(pci.BusId[:]))
		c.gpu.PCIBusID = sysfsBusID(c.busID)
		c.gpu.NUMANode = numaNodeOf(n.sysfs, c.gpu.PCIBusID)
	} else {
		lost("PCI address", ret)
	}
	return c, nil
}

// linkCards sets each card's links: NVLink where an active link leads to the other
// card, or both cards have links to the NVSwitch fabric (DGX A100 and later), else the
// closest common PCIe ancestor.
func linkCards(cards []*card) {
	nvlinked := map[[2]int]bool{}
	var onSwitch []int
	for i, c := range cards {
		peers, switched := nvlinkPeers(c.dev, cards)
		for _, j := range peers {
			if j != i {
				nvlinked[[2]int{min(i, j), max(i, j)}] = true
			}
		}
		if switched {
			onSwitch = append(onSwitch, i)
		}
	}
	for a, i := range onSwitch {
		for _, j := range onSwitch[a+1:] {
			nvlinked[[2]int{i, j}] = true
		}
	}
	for i, a := range cards {
		for j, b := range cards {
			if i == j {
				continue
			}
			level := ""
			if nvlinked[[2]int{min(i, j), max(i, j)}] {
				level = v4.GPULinkNVLink
			} else if anc, ret := a.dev.GetTopologyCommonAncestor(b.dev); ret == nvml.SUCCESS {
				level = topologyLevel(anc)
			}
			if level != "" {
				a.gpu.Links = append(a.gpu.Links, v4.GPULink{UUID: b.gpu.UUID, Level: level})
			}
		}
	}
}

// nvlinkPeers returns the positions of the cards dev has an active NVLink to, and
// whether an active link goes to an NVSwitch.
func nvlinkPeers(dev nvml.Device, cards []*card) (peers []int, switched bool) {
	for link := range nvml.NVLINK_MAX_LINKS {
		state, ret := dev.GetNvLinkState(link)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			break // no (more) links on this card
		}
		if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
			continue
		}
		if kind, ret := dev.GetNvLinkRemoteDeviceType(link); ret == nvml.SUCCESS && kind == nvml.NVLINK_DEVICE_TYPE_SWITCH {
			switched = true
			continue
		}
		remote, ret := dev.GetNvLinkRemotePciInfo(link)
		if ret != nvml.SUCCESS {
			continue
		}
		bus := strings.ToUpper(cString(remote.BusId[:]))
		if j := slices.IndexFunc(cards, func(c *card) bool { return c.busID != "" && c.busID == bus }); j >= 0 && !slices.Contains(peers, j) {
			peers = append(peers, j)
		}
	}
	return peers, switched
}

// topologyLevel maps NVML's common-ancestor levels onto berth's link levels.
func topologyLevel(l nvml.GpuTopologyLevel) string {
	switch {
	case l <= nvml.TOPOLOGY_MULTIPLE: // the same board or PCIe switches
		return v4.GPULinkPCIeSwitch
	case l <= nvml.TOPOLOGY_NODE: // one host bridge or NUMA node
		return v4.GPULinkCPU
	}
	return v4.GPULinkCrossCPU
}

// cString reads a NUL-terminated C string out of NVML's fixed arrays.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// healthWaitMillis is how long one wait for NVML events lasts, so a cancelled watch ends soon.
const healthWaitMillis = 1000

// WatchHealth reports cards with critical XID errors (NVML events) until ctx ends. Cards
// that cannot deliver events are skipped; a failed wait ends the watch with its error
// (the caller marks every card, as it can no longer tell).
func (n *NVML) WatchHealth(ctx context.Context, unhealthy func(uuid, reason string)) error {
	set, ret := n.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("create an NVML event set: %w", ret)
	}
	defer set.Free()
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("count the GPUs: %w", ret)
	}
	watched := 0
	for i := range count {
		dev, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != nvml.SUCCESS || supported&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if dev.RegisterEvents(nvml.EventTypeXidCriticalError, set) == nvml.SUCCESS {
			watched++
		}
	}
	if watched == 0 {
		<-ctx.Done() // nothing can report; keep the caller's loop quiet
		return nil
	}
	for ctx.Err() == nil {
		e, ret := set.Wait(healthWaitMillis)
		switch {
		case ret == nvml.ERROR_TIMEOUT:
			continue
		case ret != nvml.SUCCESS:
			return fmt.Errorf("wait for NVML events: %w", ret)
		case e.EventType != nvml.EventTypeXidCriticalError || !CriticalXID(e.EventData):
			continue
		}
		if e.Device == nil {
			return errors.New("an NVML XID event without its card")
		}
		uuid, ret := e.Device.GetUUID()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("XID %d on a card without a UUID: %w", e.EventData, ret)
		}
		unhealthy(uuid, fmt.Sprintf("XID %d", e.EventData))
	}
	return nil
}

var _ Source = (*NVML)(nil)
