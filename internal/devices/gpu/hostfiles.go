package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// What a container needs to use a card when the NVIDIA container toolkit is not
// installed: the card's device node, the driver's control nodes, and the user-space
// driver (libcuda and its companions, nvidia-smi) bind-mounted read-only, as the
// toolkit's nvidia-container-cli would give them.

// ContainerLibDir and ContainerBinDir are where the driver's files are mounted in a
// container: the paths CUDA images already have in LD_LIBRARY_PATH and PATH.
const (
	ContainerDriverDir = "/usr/local/nvidia"
	ContainerLibDir    = ContainerDriverDir + "/lib64"
	ContainerBinDir    = ContainerDriverDir + "/bin"
)

// controlDevices are the driver's device nodes every CUDA program opens besides its
// card's /dev/nvidia<minor>.
var controlDevices = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}

// driverLibraries are the user-space driver's libraries a compute workload loads
// (the toolkit's "compute" and "utility" capabilities), by name prefix.
var driverLibraries = []string{
	"libcuda.so", "libcudadebugger.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so",
	"libnvidia-nvvm.so", "libnvidia-opencl.so", "libnvidia-gpucomp.so", "libnvidia-allocator.so",
	"libnvidia-cfg.so", "libnvidia-pkcs11.so",
}

// driverBinaries are the driver's tools a workload may call.
var driverBinaries = []string{"nvidia-smi", "nvidia-debugdump", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"}

// libraryDirs are searched for the driver's libraries, under the host root.
var libraryDirs = []string{"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib", "lib64", "lib/x86_64-linux-gnu"}

// binaryDirs are searched for the driver's tools.
var binaryDirs = []string{"usr/bin", "usr/local/bin", "usr/sbin"}

// HostFiles are the files of the NVIDIA driver on a host, with their paths on it.
type HostFiles struct {
	// ControlDevices are /dev/nvidiactl, /dev/nvidia-uvm, ... as present.
	ControlDevices []string
	// Libraries and Binaries are the driver's files; each library is mounted under
	// ContainerLibDir by its own name (symlinks resolved), each tool under ContainerBinDir.
	Libraries []string
	Binaries  []string
}

// FindHostFiles looks for the driver's files under root ("/" on a node; a test's tree).
// Where a library appears twice (a symlink and its target, two directories), the first
// directory wins, so one name is mounted once.
func FindHostFiles(root string) (HostFiles, error) {
	var hf HostFiles
	for _, name := range controlDevices {
		p := filepath.Join(root, "dev", name)
		if _, err := os.Stat(p); err == nil {
			hf.ControlDevices = append(hf.ControlDevices, p)
		}
	}
	seen := map[string]bool{}
	for _, dir := range libraryDirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if seen[name] || !slices.ContainsFunc(driverLibraries, func(p string) bool { return strings.HasPrefix(name, p) }) {
				continue
			}
			p := filepath.Join(root, dir, name)
			if _, err := os.Stat(p); err != nil { // a dangling link
				continue
			}
			seen[name] = true
			hf.Libraries = append(hf.Libraries, p)
		}
	}
	for _, name := range driverBinaries {
		for _, dir := range binaryDirs {
			p := filepath.Join(root, dir, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				hf.Binaries = append(hf.Binaries, p)
				break
			}
		}
	}
	if len(hf.ControlDevices) == 0 || !slices.ContainsFunc(hf.Libraries, func(p string) bool { return strings.HasPrefix(filepath.Base(p), "libcuda.so") }) {
		return hf, fmt.Errorf("the NVIDIA driver is not installed under %s: no /dev/nvidiactl or no libcuda.so", root)
	}
	return hf, nil
}

// CardDevice is the device node of the card with the minor number.
func CardDevice(root string, minor int) string {
	return filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", minor))
}
