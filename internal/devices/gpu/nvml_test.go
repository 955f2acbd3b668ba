//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	v4 "github.com/berthhq/berth/api/v4"
)

// dgx returns go-nvml's DGX A100 model (8 × A100 40 GB) with what the model leaves out
// filled in: PCI addresses in NVML's form, NUMA nodes in a sysfs tree (cards 0-3 on node
// 0, 4-7 on node 1), PCIe ancestors (a switch per pair, a host bridge per half), and NVLinks made by
// nvlink: nil for none.
func dgx(t *testing.T, nvlink func(d *dgxa100.Device, link int) (peer int, toSwitch bool, ok bool)) (*dgxa100.Server, string) {
	t.Helper()
	s := dgxa100.New()
	sysfs := t.TempDir()
	busID := func(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x07+i) }
	for i, dev := range s.Devices {
		d := dev.(*dgxa100.Device)
		dir := filepath.Join(sysfs, "bus", "pci", "devices", sysfsBusID(busID(i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(fmt.Sprintf("%d\n", i/4)), 0o644); err != nil {
			t.Fatal(err)
		}
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(busID(i)), nvml.SUCCESS }
		d.GetTopologyCommonAncestorFunc = func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			switch j := o.(*dgxa100.Device).Index; {
			case j/2 == i/2:
				return nvml.TOPOLOGY_SINGLE, nvml.SUCCESS
			case j/4 == i/4:
				return nvml.TOPOLOGY_HOSTBRIDGE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if nvlink == nil {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			if link >= 12 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if _, _, ok := nvlink(d, link); !ok {
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetNvLinkRemoteDeviceTypeFunc = func(link int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			if _, toSwitch, _ := nvlink(d, link); toSwitch {
				return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
			}
			return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
			peer, _, _ := nvlink(d, link)
			return pciInfo(busID(peer)), nvml.SUCCESS
		}
	}
	return s, sysfs
}

func pciInfo(busID string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := range len(busID) {
		p.BusId[i] = int8(busID[i])
	}
	return p
}

// linkLevels writes a card's links as "level@index" in index order.
func linkLevels(cards []v4.NodeGPU, g v4.NodeGPU) string {
	index := map[string]int{}
	for _, c := range cards {
		index[c.UUID] = c.Index
	}
	parts := make([]string, len(cards))
	for i := range parts {
		parts[i] = "-"
	}
	for _, l := range g.Links {
		parts[index[l.UUID]] = l.Level
	}
	return strings.Join(parts, " ")
}

func TestNVMLCards(t *testing.T) {
	const (
		nv, sw, cpu, cross = v4.GPULinkNVLink, v4.GPULinkPCIeSwitch, v4.GPULinkCPU, v4.GPULinkCrossCPU
	)
	row := func(levels ...string) string { return strings.Join(levels, " ") }
	cases := []struct {
		name   string
		nvlink func(d *dgxa100.Device, link int) (int, bool, bool)
		card0  string // the links of card 0
		card5  string
	}{
		{"NVSwitch fabric: every pair NVLinked", func(d *dgxa100.Device, link int) (int, bool, bool) { return 0, true, true },
			row("-", nv, nv, nv, nv, nv, nv, nv), row(nv, nv, nv, nv, nv, "-", nv, nv)},
		{"NVLink pairs, PCIe elsewhere", func(d *dgxa100.Device, link int) (int, bool, bool) {
			return d.Index ^ 1, false, link < 2 // two links to the pair's other card
		}, row("-", nv, cpu, cpu, cross, cross, cross, cross), row(cross, cross, cross, cross, nv, "-", cpu, cpu)},
		{"no NVLink", nil, row("-", sw, cpu, cpu, cross, cross, cross, cross), row(cross, cross, cross, cross, sw, "-", cpu, cpu)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, sysfs := dgx(t, c.nvlink)
			n, err := OpenNVML(s, sysfs)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			cards, err := n.Cards()
			if err != nil {
				t.Fatal(err)
			}
			if len(cards) != 8 {
				t.Fatalf("%d cards, want 8", len(cards))
			}
			for i, g := range cards {
				d := s.Devices[i].(*dgxa100.Device)
				if g.UUID != d.UUID || g.Index != i || g.Minor != i || g.MemoryMiB != 40960 || g.Model != "Mock NVIDIA A100-SXM4-40GB" ||
					g.NUMANode != i/4 || g.PCIBusID != fmt.Sprintf("0000:%02x:00.0", 7+i) || g.MIG || g.Unhealthy != "" {
					t.Fatalf("card %d: %+v (device UUID %s)", i, g, d.UUID)
				}
			}
			if got := linkLevels(cards, cards[0]); got != c.card0 {
				t.Errorf("card 0 links %q, want %q", got, c.card0)
			}
			if got := linkLevels(cards, cards[5]); got != c.card5 {
				t.Errorf("card 5 links %q, want %q", got, c.card5)
			}
			node := &v4.Node{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode},
				Metadata: v4.ObjectMeta{Name: "dgx"}, Spec: v4.NodeSpec{GPUs: cards}}
			v4.DefaultNode(node)
			if errs := v4.ValidateNode(node); len(errs) > 0 {
				t.Fatalf("the fingerprint does not validate: %v", errs)
			}
		})
	}
}

func TestNVMLLostAndMIGCards(t *testing.T) {
	s, sysfs := dgx(t, nil)
	lost := s.Devices[2].(*dgxa100.Device)
	lost.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	s.Devices[3].(*dgxa100.Device).MigMode = nvml.DEVICE_MIG_ENABLE
	n, err := OpenNVML(s, sysfs)
	if err != nil {
		t.Fatal(err)
	}
	cards, err := n.Cards()
	if err != nil {
		t.Fatal(err)
	}
	if g := cards[2]; g.Unhealthy != "NVML lost the card (memory)" || g.MemoryMiB != 1 {
		t.Errorf("lost card: %+v", g)
	}
	if !cards[3].MIG || cards[3].Unhealthy != "" {
		t.Errorf("MIG card: %+v", cards[3])
	}
}

func TestNVMLMissingLibrary(t *testing.T) {
	s := dgxa100.New()
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	if _, err := OpenNVML(s, "/sys"); !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("err %v, want ErrNoLibrary", err)
	}
	s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	if _, err := OpenNVML(s, "/sys"); err == nil || errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "initialise NVML") {
		t.Fatalf("err %v, want the driver's error", err)
	}
	// This machine's real library: absent here, so the node has no cards.
	if n, err := OpenNVML(nil, "/sys"); err == nil {
		n.Close()
		t.Log("NVML is installed on this machine")
	} else if !errors.Is(err, ErrNoLibrary) {
		t.Logf("NVML present but not usable: %v", err)
	}
}

// TestNVMLHealth feeds XID events through the model's event set: a critical XID marks its
// card, an application's XID does not, a failed wait ends the watch.
func TestNVMLHealth(t *testing.T) {
	s, sysfs := dgx(t, nil)
	events := make(chan nvml.EventData, 4)
	var failWait error
	var mu sync.Mutex
	registered := 0
	for _, dev := range s.Devices {
		d := dev.(*dgxa100.Device)
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
			return nvml.EventTypeXidCriticalError | nvml.EventTypePState, nvml.SUCCESS
		}
		d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
			mu.Lock()
			defer mu.Unlock()
			if mask == nvml.EventTypeXidCriticalError {
				registered++
			}
			return nvml.SUCCESS
		}
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				select {
				case e, ok := <-events:
					if !ok {
						mu.Lock()
						defer mu.Unlock()
						failWait = nvml.ERROR_UNKNOWN
						return nvml.EventData{}, nvml.ERROR_UNKNOWN
					}
					return e, nvml.SUCCESS
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
		}, nvml.SUCCESS
	}
	n, err := OpenNVML(s, sysfs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan string, 8)
	done := make(chan error, 1)
	go func() {
		done <- n.WatchHealth(ctx, func(uuid, reason string) { got <- uuid + " " + reason })
	}()
	events <- nvml.EventData{Device: s.Devices[1], EventType: nvml.EventTypeXidCriticalError, EventData: 13} // a bad kernel: ignored
	events <- nvml.EventData{Device: s.Devices[1], EventType: nvml.EventTypePState, EventData: 79}
	events <- nvml.EventData{Device: s.Devices[3], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	want := s.Devices[3].(*dgxa100.Device).UUID + " XID 79"
	select {
	case g := <-got:
		if g != want {
			t.Fatalf("reported %q, want %q", g, want)
		}
	case <-ctx.Done():
		t.Fatal("no card reported")
	}
	close(events)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "wait for NVML events") {
		t.Fatalf("watch ended with %v, want the failed wait", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if registered != 8 || failWait == nil {
		t.Fatalf("%d cards registered for XID events, want 8", registered)
	}
	select {
	case g := <-got:
		t.Fatalf("also reported %q", g)
	default:
	}
}
