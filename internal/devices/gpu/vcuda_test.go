package gpu

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vcudaReader is vcuda-controller's resource_data_t (include/hijack.h, with its nvml
// subset's 16-byte bus ID and glibc's FILENAME_MAX of 4096), read the way the library
// reads it: one read of sizeof(resource_data_t).
const vcudaReader = `#include <stdio.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
typedef struct { int major; int minor; } __attribute__((packed, aligned(8))) version_t;
typedef struct {
  char pod_uid[48];
  int limit;
  char occupied[4044];
  char container_name[4096];
  char bus_id[16];
  uint64_t gpu_memory;
  int utilization;
  int hard_limit;
  version_t driver_version;
  int enable;
} __attribute__((packed, aligned(8))) resource_data_t;
int main(int argc, char **argv) {
  resource_data_t c;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0 || read(fd, &c, sizeof(c)) != sizeof(c)) { printf("short read, sizeof %zu\n", sizeof(c)); return 1; }
  printf("sizeof=%zu uid=%s limit=%d name=%s bus=%s mem=%llu util=%d hard=%d driver=%d.%d enable=%d\n",
    sizeof(c), c.pod_uid, c.limit, c.container_name, c.bus_id, (unsigned long long)c.gpu_memory,
    c.utilization, c.hard_limit, c.driver_version.major, c.driver_version.minor, c.enable);
  int pids[1024]; int n = 0;
  int pf = open(argv[2], O_RDONLY);
  while (n < 1024 && read(pf, &pids[n], sizeof(int)) == sizeof(int)) n++;
  printf("pids=");
  for (int i = 0; i < n; i++) printf("%d,", pids[i]);
  printf("\n");
  return 0;
}
`

// TestVCUDAFilesAsTheLibraryReadsThem compiles the library's struct and reads berth's
// files with it, as libcuda-control.so does.
func TestVCUDAFilesAsTheLibraryReadsThem(t *testing.T) {
	b, err := EncodeVCUDAConfig(VCUDAConfig{PodUID: "0.train.ml.berth.1700000000", ContainerName: "ml.0.train.worker",
		BusID: "00000000:07:00.0"[:15], MemoryBytes: 16 * 268435456, Cores: 30, DriverMajor: 550, DriverMinor: 54})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != VCUDAConfigSize {
		t.Fatalf("%d bytes, want %d", len(b), VCUDAConfigSize)
	}
	le := binary.LittleEndian
	for _, f := range []struct {
		name string
		off  int
		want uint64
		size int
	}{{"limit", 48, 0, 4}, {"gpu_memory", 8208, 16 * 268435456, 8}, {"utilization", 8216, 30, 4}, {"hard_limit", 8220, 1, 4},
		{"driver major", 8224, 550, 4}, {"driver minor", 8228, 54, 4}, {"enable", 8232, 1, 4}} {
		var got uint64
		if f.size == 8 {
			got = le.Uint64(b[f.off:])
		} else {
			got = uint64(le.Uint32(b[f.off:]))
		}
		if got != f.want {
			t.Errorf("%s at %d: %d, want %d", f.name, f.off, got, f.want)
		}
	}
	if string(b[4096:4096+len("ml.0.train.worker")]) != "ml.0.train.worker" || b[4096+len("ml.0.train.worker")] != 0 {
		t.Error("container_name is not at 4096")
	}
	pids := EncodeVCUDAPids([]int{300, 12, 4000, 12})
	if len(pids) != 12 || le.Uint32(pids) != 12 || le.Uint32(pids[4:]) != 300 || le.Uint32(pids[8:]) != 4000 {
		t.Errorf("pids.config % x: want 12, 300, 4000 sorted, once each", pids)
	}

	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("skipping the C reader: no gcc (the offsets above were checked)")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "reader.c"), filepath.Join(dir, "reader")
	cfg, pidFile := filepath.Join(dir, "vcuda.config"), filepath.Join(dir, "pids.config")
	for p, data := range map[string][]byte{src: []byte(vcudaReader), cfg: b, pidFile: pids} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(gcc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, cfg, pidFile).CombinedOutput()
	if err != nil {
		t.Fatalf("reader: %v\n%s", err, out)
	}
	want := "sizeof=8240 uid=0.train.ml.berth.1700000000 limit=0 name=ml.0.train.worker bus=00000000:07:00. mem=4294967296 util=30 hard=1 driver=550.54 enable=1\npids=12,300,4000,\n"
	if string(out) != want {
		t.Fatalf("the library reads\n%s\nwant\n%s", out, want)
	}

	soft, _ := EncodeVCUDAConfig(VCUDAConfig{PodUID: "p", Cores: 100, SoftLimit: 80})
	if le.Uint32(soft[48:]) != 80 || le.Uint32(soft[8220:]) != 0 || le.Uint32(soft[8232:]) != 0 {
		t.Error("a soft limit on a whole card: limit 80, hard_limit 0, enable 0")
	}
	for _, bad := range []VCUDAConfig{{PodUID: strings.Repeat("u", 48), Cores: 10}, {PodUID: "p", Cores: 0}, {PodUID: "p", Cores: 10, BusID: strings.Repeat("b", 16)}} {
		if _, err := EncodeVCUDAConfig(bad); err == nil {
			t.Errorf("%+v encoded", bad)
		}
	}
}

func TestDriverVersion(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/driver/nvidia"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/driver/nvidia/version"),
		[]byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n"), 0o644)
	if major, minor, err := DriverVersion(root); err != nil || major != 550 || minor != 54 {
		t.Fatalf("%d.%d %v", major, minor, err)
	}
	if _, _, err := DriverVersion(t.TempDir()); err == nil {
		t.Fatal("no driver: no error")
	}
}
