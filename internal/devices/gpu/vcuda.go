package gpu

import (
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
)

// Files of tkestack's vcuda-controller (libcuda-control.so), the library gpu-manager
// swaps in for libcuda to enforce a share: vcuda.config holds the share (its C struct
// resource_data_t, written raw), pids.config the host PIDs of the container's processes.
// The library reads both from /etc/vcuda; berth writes them in exactly the library's
// layout (docs/gpus.md, "vcuda").

// VCUDAConfigSize is sizeof(resource_data_t): the library ignores a file of another size.
const VCUDAConfigSize = 8240

// Offsets in resource_data_t (packed, aligned(8), little-endian on the machines
// vcuda-controller builds for).
const (
	vcudaPodUIDLen        = 48
	vcudaLimitOff         = 48
	vcudaContainerNameOff = 4096
	vcudaContainerNameLen = 4096 // FILENAME_MAX
	vcudaBusIDOff         = 8192
	vcudaBusIDLen         = 16 // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE of its nvml subset
	vcudaMemoryOff        = 8208
	vcudaUtilizationOff   = 8216
	vcudaHardLimitOff     = 8220
	vcudaDriverMajorOff   = 8224
	vcudaDriverMinorOff   = 8228
	vcudaEnableOff        = 8232
)

// maxVCUDAPids is the library's MAX_PIDS: it reads no more.
const maxVCUDAPids = 1024

// VCUDAConfig is one share as vcuda-controller reads it.
type VCUDAConfig struct {
	PodUID        string
	ContainerName string
	BusID         string
	// MemoryBytes is the card memory of the share; Cores its hundredths of the card.
	MemoryBytes uint64
	Cores       int
	// SoftLimit, when above 0, lets the share use idle cores up to this percentage
	// (gpu-manager's vcuda-core-limit annotation); 0 is a hard limit at Cores.
	SoftLimit int
	// DriverMajor and DriverMinor are the NVIDIA driver's version ("550.54" -> 550, 54).
	DriverMajor, DriverMinor int
}

// EncodeVCUDAConfig writes the share as the 8240 bytes of resource_data_t.
func EncodeVCUDAConfig(c VCUDAConfig) ([]byte, error) {
	switch {
	case len(c.PodUID) >= vcudaPodUIDLen:
		return nil, fmt.Errorf("vcuda.config: pod UID %q is longer than %d bytes", c.PodUID, vcudaPodUIDLen-1)
	case len(c.ContainerName) >= vcudaContainerNameLen:
		return nil, fmt.Errorf("vcuda.config: container name is longer than %d bytes", vcudaContainerNameLen-1)
	case len(c.BusID) >= vcudaBusIDLen:
		return nil, fmt.Errorf("vcuda.config: bus ID %q is longer than %d bytes", c.BusID, vcudaBusIDLen-1)
	case c.Cores < 1 || c.Cores > 100 || c.SoftLimit < 0 || c.SoftLimit > 100:
		return nil, fmt.Errorf("vcuda.config: cores %d and soft limit %d must be 1-100 and 0-100", c.Cores, c.SoftLimit)
	}
	b := make([]byte, VCUDAConfigSize)
	le := binary.LittleEndian
	copy(b, c.PodUID)
	hard := int32(1)
	if c.SoftLimit > 0 {
		le.PutUint32(b[vcudaLimitOff:], uint32(c.SoftLimit))
		hard = 0
	}
	copy(b[vcudaContainerNameOff:], c.ContainerName)
	copy(b[vcudaBusIDOff:], c.BusID)
	le.PutUint64(b[vcudaMemoryOff:], c.MemoryBytes)
	le.PutUint32(b[vcudaUtilizationOff:], uint32(c.Cores))
	le.PutUint32(b[vcudaHardLimitOff:], uint32(hard))
	le.PutUint32(b[vcudaDriverMajorOff:], uint32(c.DriverMajor))
	le.PutUint32(b[vcudaDriverMinorOff:], uint32(c.DriverMinor))
	enable := uint32(1)
	if c.Cores >= 100 { // a whole card: nothing to limit
		enable = 0
	}
	le.PutUint32(b[vcudaEnableOff:], enable)
	return b, nil
}

// EncodeVCUDAPids writes pids.config: the PIDs sorted (the library looks them up with
// bsearch), as int32, at most the library's 1024.
func EncodeVCUDAPids(pids []int) []byte {
	sorted := slices.Clone(pids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if len(sorted) > maxVCUDAPids {
		sorted = sorted[:maxVCUDAPids]
	}
	b := make([]byte, 4*len(sorted))
	for i, p := range sorted {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(p)))
	}
	return b
}

// driverVersionPattern finds the kernel module's version in /proc/driver/nvidia/version.
var driverVersionPattern = regexp.MustCompile(`Kernel Module\s+(\d+)\.(\d+)`)

// DriverVersion reads the NVIDIA driver's major and minor version from the kernel
// module's version file ("<root>/proc/driver/nvidia/version").
func DriverVersion(root string) (major, minor int, err error) {
	b, err := os.ReadFile(root + "/proc/driver/nvidia/version")
	if err != nil {
		return 0, 0, fmt.Errorf("NVIDIA driver version: %w", err)
	}
	m := driverVersionPattern.FindSubmatch(b)
	if m == nil {
		return 0, 0, fmt.Errorf("NVIDIA driver version: no kernel module version in %q", b)
	}
	major, _ = strconv.Atoi(string(m[1]))
	minor, _ = strconv.Atoi(string(m[2]))
	return major, minor, nil
}
