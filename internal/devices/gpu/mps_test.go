package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeMPSControl is a stand-in for nvidia-cuda-mps-control: with -d it starts a process
// that writes its pid in the pipe directory, as the daemon does, and records its env;
// with "quit" on stdin it ends that process.
const fakeMPSControl = `#!/bin/sh
if [ "$1" = "-d" ]; then
	echo "$CUDA_VISIBLE_DEVICES $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> "$CUDA_MPS_LOG_DIRECTORY/started"
	sh -c 'echo $$ > "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"; exec sleep 60' </dev/null >/dev/null 2>&1 &
	exit 0
fi
read cmd
[ "$cmd" = quit ] && kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")"
`

func TestMPSDaemons(t *testing.T) {
	dir := t.TempDir()
	control := filepath.Join(dir, "nvidia-cuda-mps-control")
	if err := os.WriteFile(control, []byte(fakeMPSControl), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &MPS{Control: control, Dir: filepath.Join(dir, "mps")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pipe, err := m.Ensure(ctx, "GPU-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(context.Background(), "GPU-a") })
	if pipe != filepath.Join(dir, "mps", "GPU-a", "pipe") || !m.Running("GPU-a") {
		t.Fatalf("pipe %s, running %v", pipe, m.Running("GPU-a"))
	}
	// A second share of the card (or a restarted agent) uses the running daemon.
	if _, err := m.Ensure(ctx, "GPU-a"); err != nil {
		t.Fatal(err)
	}
	again := &MPS{Control: control, Dir: m.Dir}
	if _, err := again.Ensure(ctx, "GPU-a"); err != nil {
		t.Fatal(err)
	}
	started, _ := os.ReadFile(filepath.Join(m.Dir, "GPU-a", "log", "started"))
	if lines := strings.Split(strings.TrimSpace(string(started)), "\n"); len(lines) != 1 ||
		lines[0] != "GPU-a "+pipe+" "+filepath.Join(m.Dir, "GPU-a", "log") {
		t.Fatalf("daemon starts: %q, want one, seeing only its card", started)
	}
	if err := m.Stop(ctx, "GPU-a"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.Running("GPU-a") {
		if time.Now().After(deadline) {
			t.Fatal("the daemon still runs after quit")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A failing daemon says why.
	bad := &MPS{Control: "/bin/false", Dir: t.TempDir()}
	if _, err := bad.Ensure(ctx, "GPU-b"); err == nil || !strings.Contains(err.Error(), "start the MPS control daemon of GPU-b") {
		t.Fatalf("failing daemon: %v", err)
	}
}

func TestShareEnv(t *testing.T) {
	mps := MPSClientEnv("/p", 30, 4096)
	if mps[1] != [2]string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "30"} || mps[2] != [2]string{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4096M"} {
		t.Fatalf("MPS env %v", mps)
	}
	hami := HAMiClientEnv("/usr/local/vgpu/libvgpu.so", 30, 4096)
	if hami[1] != [2]string{"CUDA_DEVICE_MEMORY_LIMIT_0", "4096m"} || hami[2] != [2]string{"CUDA_DEVICE_SM_LIMIT", "30"} {
		t.Fatalf("HAMi env %v", hami)
	}
}
