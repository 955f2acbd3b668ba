package gpu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
)

// Enforcing shares of cards (docs/gpus.md, "Enforcing shares"), in the node's mode:
//   - mps: one MPS control daemon per card; each share is a client whose env caps its SMs
//     and memory; containers share the host's IPC namespace and the daemon's pipe dir.
//   - vcuda: gpu-manager's vcuda-controller: the share's vcuda.config and pids.config in
//     a directory mounted at /etc/vcuda with the VCUDAService socket, and the operator's
//     copy of the driver with libcuda-control.so at /usr/local/nvidia.
//   - hami: HAMi-core's libvgpu.so preloaded, with its limits in the env.
//   - none: time-slicing; a share is a scheduling promise only.

// GPU sharing modes (Options.Sharing).
const (
	SharingMPS   = "mps"
	SharingVCUDA = "vcuda"
	SharingHAMi  = "hami"
	SharingNone  = "none"
)

// hamiContainerLib is where libvgpu.so is mounted in a container.
const hamiContainerLib = "/usr/local/vgpu/libvgpu.so"

// vcudaContainerDir is where a share's vcuda files are mounted: the library reads them
// there, and calls vcudaSocket in it.
const (
	vcudaContainerDir = "/etc/vcuda"
	vcudaSocket       = "vcuda.sock"
)

// SharingMode resolves the configured sharing mode: auto ("" too) is mps where the MPS
// control daemon is installed, else none; an explicit mode needs its files.
func SharingMode(mode, vcudaDriverDir, hamiLib string) (string, error) {
	switch mode {
	case "", ModeAuto:
		if _, err := FindMPS(); err == nil {
			return SharingMPS, nil
		}
		return SharingNone, nil
	case SharingMPS:
		if _, err := FindMPS(); err != nil {
			return "", fmt.Errorf("GPU sharing mps: %w", err)
		}
	case SharingVCUDA:
		if st, err := os.Stat(vcudaDriverDir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("GPU sharing vcuda needs the directory of vcuda-controller's driver (libcuda-control.so, gpu-client), got %q", vcudaDriverDir)
		}
	case SharingHAMi:
		if st, err := os.Stat(hamiLib); err != nil || st.IsDir() {
			return "", fmt.Errorf("GPU sharing hami needs HAMi-core's libvgpu.so, got %q", hamiLib)
		}
	case SharingNone:
	default:
		return "", fmt.Errorf("GPU sharing %q: use %s, %s, %s, %s or %s", mode, ModeAuto, SharingMPS, SharingVCUDA, SharingHAMi, SharingNone)
	}
	return mode, nil
}

// ShareRequest is one task with a share of one card.
type ShareRequest struct {
	Namespace, Name string // the task group
	Task            *driver.Task
}

// ShareSetup is what a share needs besides its card: env (set over the spec's), mounts,
// the host's IPC namespace (MPS clients of a container), the driver directory to
// mount at /usr/local/nvidia in place of the driver's own files (vcuda's), and files of
// the mounts to give to the container's user (vcuda's socket: driver.ContainerSetup.OwnedFiles).
type ShareSetup struct {
	Env       [][2]string
	Mounts    []driver.Mount
	IPCHost   bool
	DriverDir string
	Owned     []string
}

// shares enforces the shares of cards on this node.
type shares struct {
	mode        string
	mps         *MPS
	hamiLib     string
	vcudaDriver string // mounted at /usr/local/nvidia
	vcudaDir    string // a directory per share: vcuda.config, pids.config, vcuda.sock
	driverMajor int
	driverMinor int
	pids        driver.Processes // the Docker driver's, for pids.config
	log         *slog.Logger

	mu      sync.Mutex
	servers map[string]*VCUDAServer // by task ID
}

// newShares sets up the node's sharing mode (resolved by SharingMode).
func newShares(opts Options) *shares {
	s := &shares{mode: opts.Sharing, hamiLib: opts.HAMiLib, vcudaDriver: opts.VCUDADriverDir, pids: opts.PIDs,
		vcudaDir: filepath.Join(opts.DataDir, "vcuda"), log: opts.Logger, servers: map[string]*VCUDAServer{}}
	switch s.mode {
	case SharingMPS:
		control, _ := FindMPS()
		s.mps = &MPS{Control: control, Dir: filepath.Join(opts.DataDir, "mps")}
	case SharingVCUDA:
		var err error
		if s.driverMajor, s.driverMinor, err = DriverVersion("/"); err != nil {
			s.log.Warn("the vcuda files will say driver 0.0", "err", err)
		}
	}
	return s
}

// Share sets up one task's share of its card, in the node's sharing mode.
func (m *Manager) Share(ctx context.Context, req ShareRequest) (ShareSetup, error) {
	return m.shares.share(ctx, req)
}

func (s *shares) share(ctx context.Context, req ShareRequest) (ShareSetup, error) {
	t := req.Task
	g := t.GPUs[0]
	container := t.Container != nil
	switch s.mode {
	case SharingMPS:
		pipe, err := s.mps.Ensure(ctx, g.UUID)
		if err != nil {
			return ShareSetup{}, err
		}
		setup := ShareSetup{Env: MPSClientEnv(pipe, g.Cores, g.MemoryMiB)}
		if container {
			setup.Mounts = []driver.Mount{{HostPath: pipe, ContainerPath: pipe}}
			setup.IPCHost = true // MPS clients and the server share memory through the host's IPC
		}
		return setup, nil
	case SharingHAMi:
		if !container {
			env := HAMiClientEnv(s.hamiLib, g.Cores, g.MemoryMiB)
			return ShareSetup{Env: append(env, [2]string{"CUDA_DEVICE_MEMORY_SHARED_CACHE", filepath.Join(t.RunBaseDir, "cudevshr.cache")})}, nil
		}
		return ShareSetup{
			Env:    HAMiClientEnv(hamiContainerLib, g.Cores, g.MemoryMiB),
			Mounts: []driver.Mount{{HostPath: s.hamiLib, ContainerPath: hamiContainerLib, ReadOnly: true}},
		}, nil
	case SharingVCUDA:
		if !container {
			return ShareSetup{}, errors.New("the vcuda sharing mode enforces containers' shares only (its library reads /etc/vcuda); run processes with shares on a node with --gpu-sharing mps or hami")
		}
		dir, err := s.serveVCUDA(t.ID, req.Namespace+"/"+req.Name, g, true)
		if err != nil {
			return ShareSetup{}, err
		}
		return ShareSetup{
			Mounts:    []driver.Mount{{HostPath: dir, ContainerPath: vcudaContainerDir, ReadOnly: true}},
			DriverDir: s.vcudaDriver,
			// The socket is 0660 (ServeVCUDA): the container's user must own it.
			Owned: []string{filepath.Join(dir, vcudaSocket)},
		}, nil
	}
	return ShareSetup{}, nil // none: time-slicing
}

// shareDir is a share's vcuda directory: short, as its socket's path must fit sun_path.
func (s *shares) shareDir(taskID string) string {
	sum := sha256.Sum256([]byte(taskID))
	return filepath.Join(s.vcudaDir, hex.EncodeToString(sum[:8]))
}

// serveVCUDA writes a share's vcuda.config (unless it exists: a restarted agent keeps
// it) and serves its VCUDAService, which writes pids.config when gpu-client registers.
func (s *shares) serveVCUDA(taskID, podKey string, g driver.GPU, writeConfig bool) (string, error) {
	dir := s.shareDir(taskID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("vcuda directory: %w", err)
	}
	cfgPath := filepath.Join(dir, "vcuda.config")
	if _, err := os.Stat(cfgPath); writeConfig && errors.Is(err, os.ErrNotExist) {
		if err := s.writeConfig(dir, taskID, podKey, g); err != nil {
			return "", err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers[taskID] != nil {
		return dir, nil
	}
	var refresh pidsRefresh
	srv, err := ServeVCUDA(filepath.Join(dir, vcudaSocket), func(ctx context.Context, _ *VDeviceRequest) error {
		return refresh.do(ctx, func() error { return s.writePids(ctx, taskID, dir) })
	})
	if err != nil {
		return "", err
	}
	s.servers[taskID] = srv
	return dir, nil
}

// writeConfig writes a share's vcuda.config and an empty pids.config.
func (s *shares) writeConfig(dir, taskID, podKey string, g driver.GPU) error {
	sum := sha256.Sum256([]byte(podKey))
	b, err := EncodeVCUDAConfig(VCUDAConfig{
		PodUID: hex.EncodeToString(sum[:16]), ContainerName: taskID,
		MemoryBytes: uint64(g.MemoryMiB) << 20, Cores: g.Cores,
		DriverMajor: s.driverMajor, DriverMinor: s.driverMinor,
	})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "vcuda.config"), b, 0o644); err != nil {
		return fmt.Errorf("vcuda.config: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, "pids.config"), nil, 0o644); err != nil {
		return fmt.Errorf("pids.config: %w", err)
	}
	return nil
}

// minPidsRefresh spaces the rewrites of one share's pids.config: the container's
// processes can call its socket as often as they like, and each rewrite asks the Docker
// daemon for the container's processes.
const minPidsRefresh = 250 * time.Millisecond

// pidsRefresh runs one share's rewrites one at a time, at most one per minPidsRefresh: a
// registration waits its turn, then writes the processes as they are then.
type pidsRefresh struct {
	mu   sync.Mutex
	last time.Time
}

func (p *pidsRefresh) do(ctx context.Context, write func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wait := time.Until(p.last.Add(minPidsRefresh)); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	p.last = time.Now()
	return write()
}

// writePids writes the container's processes to its pids.config.
func (s *shares) writePids(ctx context.Context, taskID, dir string) error {
	if s.pids == nil {
		return errors.New("no driver lists the container's processes")
	}
	pids, err := s.pids.PIDs(ctx, taskID)
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		return fmt.Errorf("container %s has no processes", taskID)
	}
	return atomicfile.Write(filepath.Join(dir, "pids.config"), EncodeVCUDAPids(pids), 0o644)
}

// Restore serves again the vcuda socket of a share a previous agent started: task is
// the task's ID, group its task group's namespace/name, sharing the mode the share was
// started in (the agent's checkpoint). Other modes keep nothing to restore.
func (m *Manager) Restore(task, group, sharing string, held v4.TaskGPU) {
	if sharing != SharingVCUDA || held.Cores >= v4.CoresPerGPU {
		return
	}
	g := driver.GPU{UUID: held.UUID, Cores: held.Cores, MemoryMiB: held.MemoryMiB}
	if _, err := m.shares.serveVCUDA(task, group, g, false); err != nil {
		m.log.Warn("cannot serve the vcuda socket of a share again", "task", task, "err", err)
	}
}

// Release ends the vcuda server of a removed task's share and, when it was started in
// the vcuda mode, removes its files.
func (m *Manager) Release(task, sharing string) {
	s := m.shares
	s.mu.Lock()
	srv := s.servers[task]
	delete(s.servers, task)
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	if sharing == SharingVCUDA {
		os.RemoveAll(s.shareDir(task))
	}
}

// close ends every vcuda server; the files stay for the next agent.
func (s *shares) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, srv := range s.servers {
		srv.Close()
		delete(s.servers, id)
	}
}
