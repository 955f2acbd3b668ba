// Package gpu finds a node's NVIDIA cards and watches their health: per card its UUID,
// model, memory, MIG mode, NUMA node and the links to the other cards, read through NVML
// (github.com/NVIDIA/go-nvml, which loads libnvidia-ml at run time). A machine without
// the library, or a build without cgo, simply has no cards. Its Manager is the node's
// cards for the agent and the executor, beside devices/plugin's Manager for the device
// plugins: the inventory, the health loop, and the shares of cards it enforces (MPS,
// vcuda, HAMi).
package gpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// ErrNoLibrary says NVML cannot be used here: libnvidia-ml is not installed, or berth was
// built without cgo. The node then reports no cards.
var ErrNoLibrary = errors.New("NVML is not available (no libnvidia-ml.so.1, or berth built without cgo)")

// Source is where an agent reads its cards from.
type Source interface {
	// Cards fingerprints the cards, links and NUMA nodes included.
	Cards() ([]v4.NodeGPU, error)
	// WatchHealth calls unhealthy for each card that reports a critical error, until ctx
	// ends or the events fail (the error).
	WatchHealth(ctx context.Context, unhealthy func(uuid, reason string)) error
	// Close releases the library.
	Close() error
}

// numaNodeOf reads the NUMA node of a PCI device from sysfs ("<sysfs>/bus/pci/devices/
// 0000:07:00.0/numa_node"); -1 when it is unknown (no NUMA, or no such device).
func numaNodeOf(sysfs, busID string) int {
	if busID == "" {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(sysfs, "bus", "pci", "devices", busID, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// sysfsBusID turns NVML's bus ID ("00000000:07:00.0": a 32-bit domain) into the one
// sysfs names its devices by ("0000:07:00.0").
func sysfsBusID(nvmlBusID string) string {
	id := strings.ToLower(nvmlBusID)
	if len(id) == len("00000000:07:00.0") {
		id = strings.TrimPrefix(id, "0000")
	}
	return id
}

// ignoredXIDs are the XID errors an application causes (a bad memory access, a kernel
// killed or timed out): the card stays usable, as NVIDIA's device plugin decides too.
var ignoredXIDs = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// CriticalXID reports an XID error that makes a card unusable until it is reset.
func CriticalXID(xid uint64) bool { return !ignoredXIDs[xid] }
