package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
)

// Enforcing shares of cards (docs/gpus.md, "Enforcing shares"), in the node's mode:
//   - mps: one MPS control daemon per card; each share is a client whose env caps its SMs
//     and memory; containers share the host's IPC namespace and the daemon's pipe dir.
//   - vcuda: gpu-manager's vcuda-controller: the share's vcuda.config and pids.config in
//     a directory mounted at /etc/vcuda with the VCUDAService socket, and the operator's
//     copy of the driver with libcuda-control.so at /usr/local/nvidia.
//   - hami: HAMi-core's libvgpu.so preloaded, with its limits in the env.
//   - none: time-slicing; a share is a scheduling promise only.

// GPU sharing modes (Config.GPUSharing).
const (
	GPUSharingMPS   = "mps"
	GPUSharingVCUDA = "vcuda"
	GPUSharingHAMi  = "hami"
	GPUSharingNone  = "none"
)

// hamiContainerLib is where libvgpu.so is mounted in a container.
const hamiContainerLib = "/usr/local/vgpu/libvgpu.so"

// vcudaContainerDir is where a share's vcuda files are mounted: the library reads them
// there, and calls vcudaSocket in it.
const (
	vcudaContainerDir = "/etc/vcuda"
	vcudaSocket       = "vcuda.sock"
)

// gpuShares enforces the shares of cards on this node.
type gpuShares struct {
	mode        string
	mps         *gpu.MPS
	hamiLib     string
	vcudaDriver string // mounted at /usr/local/nvidia
	vcudaDir    string // a directory per share: vcuda.config, pids.config, vcuda.sock
	driverMajor int
	driverMinor int
	pids        driver.Processes // the Docker driver's, for pids.config
	log         logger

	mu      sync.Mutex
	servers map[string]*gpu.VCUDAServer // by task ID
}

// sharingMode resolves Config.GPUSharing: auto is mps where the MPS control daemon is
// installed, else none.
func sharingMode(cfg Config) (string, error) {
	switch cfg.GPUSharing {
	case "", GPUAuto:
		if _, err := gpu.FindMPS(); err == nil {
			return GPUSharingMPS, nil
		}
		return GPUSharingNone, nil
	case GPUSharingMPS:
		if _, err := gpu.FindMPS(); err != nil {
			return "", fmt.Errorf("GPU sharing mps: %w", err)
		}
	case GPUSharingVCUDA:
		if st, err := os.Stat(cfg.VCUDADriverDir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("GPU sharing vcuda needs the directory of vcuda-controller's driver (libcuda-control.so, gpu-client), got %q", cfg.VCUDADriverDir)
		}
	case GPUSharingHAMi:
		if st, err := os.Stat(cfg.HAMiLib); err != nil || st.IsDir() {
			return "", fmt.Errorf("GPU sharing hami needs HAMi-core's libvgpu.so, got %q", cfg.HAMiLib)
		}
	case GPUSharingNone:
	default:
		return "", fmt.Errorf("GPU sharing %q: use %s, %s, %s, %s or %s", cfg.GPUSharing, GPUAuto, GPUSharingMPS, GPUSharingVCUDA, GPUSharingHAMi, GPUSharingNone)
	}
	return cfg.GPUSharing, nil
}

// newGPUShares sets up the node's sharing mode (checked by withDefaults).
func newGPUShares(cfg Config, drivers map[string]driver.Driver, log logger) *gpuShares {
	s := &gpuShares{mode: cfg.GPUSharing, hamiLib: cfg.HAMiLib, vcudaDriver: cfg.VCUDADriverDir,
		vcudaDir: filepath.Join(cfg.DataDir, "vcuda"), log: log, servers: map[string]*gpu.VCUDAServer{}}
	if p, ok := drivers[driver.KindDocker].(driver.Processes); ok {
		s.pids = p
	}
	switch s.mode {
	case GPUSharingMPS:
		control, _ := gpu.FindMPS()
		s.mps = &gpu.MPS{Control: control, Dir: filepath.Join(cfg.DataDir, "mps")}
	case GPUSharingVCUDA:
		var err error
		if s.driverMajor, s.driverMinor, err = gpu.DriverVersion("/"); err != nil {
			log.Warn("the vcuda files will say driver 0.0", "err", err)
		}
	}
	return s
}

// share sets up one task's share of its card (executor.Config.ShareCard).
func (s *gpuShares) share(ctx context.Context, req executor.ShareRequest) (executor.ShareSetup, error) {
	t := req.Task
	g := t.GPUs[0]
	container := t.Container != nil
	switch s.mode {
	case GPUSharingMPS:
		pipe, err := s.mps.Ensure(ctx, g.UUID)
		if err != nil {
			return executor.ShareSetup{}, err
		}
		setup := executor.ShareSetup{Env: gpu.MPSClientEnv(pipe, g.Cores, g.MemoryMiB)}
		if container {
			setup.Mounts = []driver.Mount{{HostPath: pipe, ContainerPath: pipe}}
			setup.IPCHost = true // MPS clients and the server share memory through the host's IPC
		}
		return setup, nil
	case GPUSharingHAMi:
		if !container {
			env := gpu.HAMiClientEnv(s.hamiLib, g.Cores, g.MemoryMiB)
			return executor.ShareSetup{Env: append(env, [2]string{"CUDA_DEVICE_MEMORY_SHARED_CACHE", filepath.Join(t.RunBaseDir, "cudevshr.cache")})}, nil
		}
		return executor.ShareSetup{
			Env:    gpu.HAMiClientEnv(hamiContainerLib, g.Cores, g.MemoryMiB),
			Mounts: []driver.Mount{{HostPath: s.hamiLib, ContainerPath: hamiContainerLib, ReadOnly: true}},
		}, nil
	case GPUSharingVCUDA:
		if !container {
			return executor.ShareSetup{}, errors.New("the vcuda sharing mode enforces containers' shares only (its library reads /etc/vcuda); run processes with shares on a node with --gpu-sharing mps or hami")
		}
		dir, err := s.serveVCUDA(t.ID, req.Namespace+"/"+req.Name, g, true)
		if err != nil {
			return executor.ShareSetup{}, err
		}
		return executor.ShareSetup{
			Mounts:    []driver.Mount{{HostPath: dir, ContainerPath: vcudaContainerDir, ReadOnly: true}},
			DriverDir: s.vcudaDriver,
			// The socket is 0660 (gpu.ServeVCUDA): the container's user must own it.
			Owned: []string{filepath.Join(dir, vcudaSocket)},
		}, nil
	}
	return executor.ShareSetup{}, nil // none: time-slicing
}

// shareDir is a share's vcuda directory: short, as its socket's path must fit sun_path.
func (s *gpuShares) shareDir(taskID string) string {
	sum := sha256.Sum256([]byte(taskID))
	return filepath.Join(s.vcudaDir, hex.EncodeToString(sum[:8]))
}

// serveVCUDA writes a share's vcuda.config (unless it exists: a restarted agent keeps
// it) and serves its VCUDAService, which writes pids.config when gpu-client registers.
func (s *gpuShares) serveVCUDA(taskID, podKey string, g driver.GPU, writeConfig bool) (string, error) {
	dir := s.shareDir(taskID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("vcuda directory: %w", err)
	}
	cfgPath := filepath.Join(dir, "vcuda.config")
	if _, err := os.Stat(cfgPath); writeConfig && errors.Is(err, os.ErrNotExist) {
		sum := sha256.Sum256([]byte(podKey))
		b, err := gpu.EncodeVCUDAConfig(gpu.VCUDAConfig{
			PodUID: hex.EncodeToString(sum[:16]), ContainerName: taskID,
			MemoryBytes: uint64(g.MemoryMiB) << 20, Cores: g.Cores,
			DriverMajor: s.driverMajor, DriverMinor: s.driverMinor,
		})
		if err != nil {
			return "", err
		}
		if err := atomicfile.Write(cfgPath, b, 0o644); err != nil {
			return "", fmt.Errorf("vcuda.config: %w", err)
		}
		if err := atomicfile.Write(filepath.Join(dir, "pids.config"), nil, 0o644); err != nil {
			return "", fmt.Errorf("pids.config: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers[taskID] != nil {
		return dir, nil
	}
	var refresh pidsRefresh
	srv, err := gpu.ServeVCUDA(filepath.Join(dir, vcudaSocket), func(ctx context.Context, _ *gpu.VDeviceRequest) error {
		return refresh.do(ctx, func() error { return s.writePids(ctx, taskID, dir) })
	})
	if err != nil {
		return "", err
	}
	s.servers[taskID] = srv
	return dir, nil
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
func (s *gpuShares) writePids(ctx context.Context, taskID, dir string) error {
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
	return atomicfile.Write(filepath.Join(dir, "pids.config"), gpu.EncodeVCUDAPids(pids), 0o644)
}

// resume serves the vcuda sockets of the shares a previous agent started.
func (s *gpuShares) resume(ckpt *checkpoint) {
	for _, key := range ckpt.keys() {
		e, ok := ckpt.get(key)
		if !ok || e.GPUSharing != GPUSharingVCUDA {
			continue
		}
		for _, g := range e.GPUs {
			if g.Cores >= v4.CoresPerGPU {
				continue
			}
			id := executor.TaskID(e.Namespace, e.Name, g.Task)
			if _, err := s.serveVCUDA(id, key, driver.GPU{UUID: g.UUID, Cores: g.Cores, MemoryMiB: g.MemoryMiB}, false); err != nil {
				s.log.Warn("cannot serve the vcuda socket of a share again", "task", id, "err", err)
			}
		}
	}
}

// release ends the vcuda servers of a removed task group and removes their files.
func (s *gpuShares) release(e checkpointEntry) {
	for _, g := range e.GPUs {
		id := executor.TaskID(e.Namespace, e.Name, g.Task)
		s.mu.Lock()
		srv := s.servers[id]
		delete(s.servers, id)
		s.mu.Unlock()
		if srv != nil {
			srv.Close()
		}
		if e.GPUSharing == GPUSharingVCUDA {
			os.RemoveAll(s.shareDir(id))
		}
	}
}

// close ends every vcuda server; the files stay for the next agent.
func (s *gpuShares) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, srv := range s.servers {
		srv.Close()
		delete(s.servers, id)
	}
}
