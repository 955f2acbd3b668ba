package gpu

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// fakePIDs lists made-up processes of a container.
type fakePIDs map[string][]int

func (f fakePIDs) PIDs(_ context.Context, id string) ([]int, error) { return f[id], nil }

func shareTask(container bool) *driver.Task {
	t := &driver.Task{ID: "ml.0.train.worker", RunBaseDir: "/pods/run",
		GPUs: []driver.GPU{{UUID: "GPU-a", Minor: 0, NUMANode: -1, Cores: 30, MemoryMiB: 4096}}}
	if container {
		t.Container = &v4.Container{Image: "cuda"}
	} else {
		t.Process = &v4.ProcessTask{ProcName: "worker"}
	}
	return t
}

func envMap(env [][2]string) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		m[e[0]] = e[1]
	}
	return m
}

func TestGPUSharingModes(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, MPSControl), []byte(fakeMPSControl), 0o755); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(t.TempDir(), "libvgpu.so")
	os.WriteFile(lib, []byte("lib"), 0o644)
	vdriver := t.TempDir()
	ctx := context.Background()

	t.Run("auto without MPS is none; explicit modes need their files", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		for _, c := range []struct {
			cfg  Options
			mode string
			err  string
		}{
			{Options{}, SharingNone, ""},
			{Options{Sharing: SharingMPS}, "", "nvidia-cuda-mps-control is not installed"},
			{Options{Sharing: SharingVCUDA}, "", "needs the directory of vcuda-controller's driver"},
			{Options{Sharing: SharingHAMi, HAMiLib: "/nothing"}, "", "needs HAMi-core's libvgpu.so"},
			{Options{Sharing: SharingHAMi, HAMiLib: lib}, SharingHAMi, ""},
			{Options{Sharing: "slices"}, "", `GPU sharing "slices": use auto, mps, vcuda, hami or none`},
		} {
			mode, err := SharingMode(c.cfg.Sharing, c.cfg.VCUDADriverDir, c.cfg.HAMiLib)
			if mode != c.mode || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %q, %v; want %q, %q", c.cfg, mode, err, c.mode, c.err)
			}
		}
	})

	t.Run("mps", func(t *testing.T) {
		t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
		cfg := Options{DataDir: t.TempDir(), Logger: quiet}
		mode, err := SharingMode("", "", "")
		if err != nil || mode != SharingMPS {
			t.Fatalf("auto with MPS installed: %q %v", mode, err)
		}
		cfg.Sharing = mode
		s := newShares(cfg)
		t.Cleanup(func() { s.mps.Stop(context.Background(), "GPU-a") })
		setup, err := s.share(ctx, ShareRequest{Namespace: "ml", Name: "0.train", Task: shareTask(true)})
		if err != nil {
			t.Fatal(err)
		}
		pipe := filepath.Join(cfg.DataDir, "mps", "GPU-a", "pipe")
		env := envMap(setup.Env)
		if env["CUDA_MPS_PIPE_DIRECTORY"] != pipe || env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] != "30" || env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] != "0=4096M" ||
			!setup.IPCHost || len(setup.Mounts) != 1 || setup.Mounts[0].HostPath != pipe || !s.mps.Running("GPU-a") {
			t.Fatalf("container share: %+v", setup)
		}
		setup, err = s.share(ctx, ShareRequest{Task: shareTask(false)})
		if err != nil || setup.IPCHost || len(setup.Mounts) != 0 || envMap(setup.Env)["CUDA_MPS_PIPE_DIRECTORY"] != pipe {
			t.Fatalf("process share: %+v %v", setup, err)
		}
	})

	t.Run("hami", func(t *testing.T) {
		s := newShares(Options{DataDir: t.TempDir(), Sharing: SharingHAMi, HAMiLib: lib, Logger: quiet})
		setup, err := s.share(ctx, ShareRequest{Task: shareTask(true)})
		env := envMap(setup.Env)
		if err != nil || env["LD_PRELOAD"] != "/usr/local/vgpu/libvgpu.so" || env["CUDA_DEVICE_MEMORY_LIMIT_0"] != "4096m" || env["CUDA_DEVICE_SM_LIMIT"] != "30" ||
			len(setup.Mounts) != 1 || setup.Mounts[0] != (driver.Mount{HostPath: lib, ContainerPath: "/usr/local/vgpu/libvgpu.so", ReadOnly: true}) {
			t.Fatalf("container share: %+v %v", setup, err)
		}
		setup, _ = s.share(ctx, ShareRequest{Task: shareTask(false)})
		if env := envMap(setup.Env); env["LD_PRELOAD"] != lib || env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] != "/pods/run/cudevshr.cache" {
			t.Fatalf("process share: %+v", setup)
		}
	})

	t.Run("none", func(t *testing.T) {
		s := newShares(Options{DataDir: t.TempDir(), Sharing: SharingNone, Logger: quiet})
		if setup, err := s.share(ctx, ShareRequest{Task: shareTask(true)}); err != nil || len(setup.Env)+len(setup.Mounts) != 0 {
			t.Fatalf("none: %+v %v", setup, err)
		}
	})

	t.Run("vcuda", func(t *testing.T) {
		dir := t.TempDir()
		pids := fakePIDs{"ml.0.train.worker": {900, 12}}
		cfg := Options{Mode: ModeOff, DataDir: dir, Sharing: SharingVCUDA, VCUDADriverDir: vdriver, PIDs: pids, Logger: quiet}
		s := newShares(cfg)
		if _, err := s.share(ctx, ShareRequest{Task: shareTask(false)}); err == nil || !strings.Contains(err.Error(), "containers' shares only") {
			t.Fatalf("process share: %v", err)
		}
		setup, err := s.share(ctx, ShareRequest{Namespace: "ml", Name: "0.train", Task: shareTask(true)})
		if err != nil {
			t.Fatal(err)
		}
		share := s.shareDir("ml.0.train.worker")
		if setup.DriverDir != vdriver || len(setup.Mounts) != 1 || setup.Mounts[0] != (driver.Mount{HostPath: share, ContainerPath: "/etc/vcuda", ReadOnly: true}) {
			t.Fatalf("container share: %+v", setup)
		}
		// The socket is 0660, for the Docker driver to give to the container's user.
		if fi, err := os.Stat(filepath.Join(share, "vcuda.sock")); err != nil || fi.Mode().Perm() != 0o660 ||
			len(setup.Owned) != 1 || setup.Owned[0] != filepath.Join(share, "vcuda.sock") {
			t.Fatalf("vcuda socket: %v %v, owned %v", fi.Mode(), err, setup.Owned)
		}
		b, _ := os.ReadFile(filepath.Join(share, "vcuda.config"))
		if len(b) != VCUDAConfigSize || binary.LittleEndian.Uint64(b[8208:]) != 4096<<20 || binary.LittleEndian.Uint32(b[8216:]) != 30 ||
			!strings.HasPrefix(string(b[4096:]), "ml.0.train.worker\x00") {
			t.Fatalf("vcuda.config: %d bytes", len(b))
		}
		register(t, filepath.Join(share, "vcuda.sock"))
		if p, _ := os.ReadFile(filepath.Join(share, "pids.config")); len(p) != 8 || binary.LittleEndian.Uint32(p) != 12 || binary.LittleEndian.Uint32(p[4:]) != 900 {
			t.Fatalf("pids.config % x", p)
		}
		// The agent restarts: the shares it recorded are served again.
		s.close()
		again := NewManager(cfg)
		held := v4.TaskGPU{Task: "worker", UUID: "GPU-a", Cores: 30, MemoryMiB: 4096}
		again.Restore("ml.0.train.worker", "ml/0.train", SharingVCUDA, held)
		pids["ml.0.train.worker"] = []int{7}
		register(t, filepath.Join(share, "vcuda.sock"))
		if p, _ := os.ReadFile(filepath.Join(share, "pids.config")); len(p) != 4 || binary.LittleEndian.Uint32(p) != 7 {
			t.Fatalf("pids.config after a restart % x", p)
		}
		again.Release("ml.0.train.worker", SharingVCUDA)
		if _, err := os.Stat(share); !os.IsNotExist(err) || len(again.shares.servers) != 0 {
			t.Fatalf("released share: %v, %d servers", err, len(again.shares.servers))
		}
	})
}

// register calls RegisterVDevice as gpu-client does.
func register(t *testing.T, socket string) {
	t.Helper()
	if err := registerAt(socket); err != nil {
		t.Fatal(err)
	}
}

func registerAt(socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(vcudaTestCodec{})))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return conn.Invoke(ctx, "/vcuda.VCUDAService/RegisterVDevice", &VDeviceRequest{ContainerName: "worker"}, &struct{}{})
}

// vcudaTestCodec sends an empty request (the server reads no field the agent uses) and
// takes the empty answer.
type vcudaTestCodec struct{}

func (vcudaTestCodec) Name() string                    { return "proto" }
func (vcudaTestCodec) Marshal(any) ([]byte, error)     { return nil, nil }
func (vcudaTestCodec) Unmarshal(_ []byte, _ any) error { return nil }

// quiet is a logger that drops everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// countingPIDs lists one process and records how many lists ran at once.
type countingPIDs struct {
	mu             sync.Mutex
	inFlight, most int
	calls          int
}

func (c *countingPIDs) PIDs(context.Context, string) ([]int, error) {
	c.mu.Lock()
	c.inFlight++
	c.calls++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	return []int{42}, nil
}

// TestVCUDARegistrationsTakeTurns: a container calling its share's socket many times at
// once costs one process listing at a time, and every call is answered.
func TestVCUDARegistrationsTakeTurns(t *testing.T) {
	pids := &countingPIDs{}
	s := newShares(Options{DataDir: t.TempDir(), Sharing: SharingVCUDA, VCUDADriverDir: t.TempDir(), PIDs: pids, Logger: quiet})
	t.Cleanup(s.close)
	if _, err := s.share(context.Background(), ShareRequest{Namespace: "ml", Name: "0.train", Task: shareTask(true)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := registerAt(filepath.Join(s.shareDir("ml.0.train.worker"), "vcuda.sock")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	pids.mu.Lock()
	defer pids.mu.Unlock()
	if pids.calls != 4 || pids.most != 1 {
		t.Fatalf("%d listings, at most %d at once; want 4, one at a time", pids.calls, pids.most)
	}
}
