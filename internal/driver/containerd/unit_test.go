package containerd

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

func TestCommandLine(t *testing.T) {
	ep, cmd := []string{"/entry"}, []string{"default"}
	for _, c := range []struct {
		name            string
		imgEP, imgCmd   []string
		command         string
		args            []string
		wantEP, wantCmd []string
		wantErr         bool
	}{
		{"image's own", ep, cmd, "", nil, ep, cmd, false},
		{"args to the entrypoint", ep, cmd, "", []string{"a"}, ep, []string{"a"}, false},
		{"command replaces the entrypoint", ep, cmd, "/bin/x", nil, []string{"/bin/x"}, nil, false},
		{"command and args", ep, cmd, "/bin/x", []string{"a"}, []string{"/bin/x"}, []string{"a"}, false},
		{"no entrypoint: command + args", nil, cmd, "sh", []string{"-c", "x"}, nil, []string{"sh", "-c", "x"}, false},
		{"no entrypoint, no command", nil, cmd, "", []string{"a"}, nil, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gotEP, gotCmd, err := commandLine("img", c.imgEP, c.imgCmd, c.command, c.args)
			if (err != nil) != c.wantErr || !reflect.DeepEqual(gotEP, c.wantEP) || !reflect.DeepEqual(gotCmd, c.wantCmd) {
				t.Fatalf("got %q %q %v, want %q %q (error %v)", gotEP, gotCmd, err, c.wantEP, c.wantCmd, c.wantErr)
			}
		})
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                "docker.io/library/busybox:latest",
		"test/busybox:1":         "docker.io/test/busybox:1",
		"reg.example:5000/a/b:c": "reg.example:5000/a/b:c",
	} {
		if got, err := normalizeImage(in); err != nil || got != want {
			t.Errorf("normalizeImage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := normalizeImage("bad image"); err == nil {
		t.Error("an invalid reference was accepted")
	}
}

// What the driver cannot do yet is refused, never silently dropped.
func TestUnsupported(t *testing.T) {
	tk := &driver.Task{Container: &v4.Container{}, Setup: &driver.ContainerSetup{NetworkMode: "BRIDGE"}}
	tk.Setup.PortBindings = []driver.PortBinding{{HostPort: 80}}
	if err := unsupported(tk); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("port mappings: %v", err)
	}
	tk.Setup.NetworkMode = "HOST"
	if err := unsupported(tk); err != nil {
		t.Errorf("host ports: %v", err)
	}
}

// Task IDs that are no containerd ID, or would leave files/, are refused; file paths
// with .. stay under the task's files directory.
func TestIDsAndPaths(t *testing.T) {
	d := &Driver{prefix: "berth-", filesDir: t.TempDir()}
	for _, id := range []string{"", "../x", "a/b", "a..b", "a b", ".", "x\x00"} {
		if d.validID(id) {
			t.Errorf("ID %q accepted", id)
		}
	}
	if !d.validID("ns.tg-1.task") {
		t.Error("a task ID refused")
	}
	// BCS's long task group names: the container name is shortened, stable and unique;
	// what is cut off is still checked.
	d.prefix = "berth-0123456789ab_"
	long := "e2e.0.ctd-holder.e2e.berth.1796004076073086078."
	a, b := d.name(long+"berth-network"), d.name(long+"berth-networl")
	if !d.validID(long+"berth-network") || len(a) > maxName || a == b || a != d.name(long+"berth-network") ||
		!strings.HasPrefix(a, d.prefix+"e2e.0.ctd-holder") {
		t.Errorf("long IDs: %q %q", a, b)
	}
	for _, id := range []string{long + "x/../../y", long + "a..b", strings.Repeat("a", maxID+1), long + "berth-network-.x"} {
		if d.validID(id) {
			t.Errorf("long ID %q accepted as %q", id, d.name(id))
		}
	}
	if !d.validPodID(long+"x") || d.validPodID("../x") {
		t.Error("pod IDs")
	}
	tk := &driver.Task{ID: "ns.tg.t", Container: &v4.Container{WorkingDir: "/w"}, Setup: &driver.ContainerSetup{},
		Files: []driver.File{{Path: "../../../../etc/evil", Content: []byte("x")}}}
	ms, err := d.mounts(tk)
	if err != nil {
		t.Fatal(err)
	}
	base := d.taskFilesDir(tk.ID) + string(filepath.Separator)
	if len(ms) != 1 || !strings.HasPrefix(ms[0].Source, base) || ms[0].Destination != "/etc/evil" {
		t.Fatalf("mount %+v: want a source under %s", ms, base)
	}
}

func TestLoggerArgs(t *testing.T) {
	if got := loggerArgs("/l/x.log", logLimits(0, 0)); len(got) != 1 || got["--path"] != "/l/x.log" {
		t.Fatalf("%v", got)
	}
	if got := loggerArgs("/l/x.log", logLimits(1<<20, 3)); got["--max-size"] != "1048576" || got["--max-files"] != "3" {
		t.Fatalf("%v", got)
	}
}

// resourceOpts give what the Docker driver gives (applyResources there): a revocable
// task the lowest cpu shares whatever it asks, with its cpu limit kept.
func TestResourceOpts(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	i := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		task driver.Task
		want specs.LinuxCPU
	}{
		{"no request", driver.Task{}, specs.LinuxCPU{Shares: u(1024)}},
		{"request and limit", driver.Task{CPURequest: 0.5, CPULimit: 1.5}, specs.LinuxCPU{Shares: u(512), Quota: i(150000), Period: u(100000)}},
		{"revocable with a request", driver.Task{Revocable: true, CPURequest: 2, CPULimit: 1}, specs.LinuxCPU{Shares: u(2), Quota: i(100000), Period: u(100000)}},
		{"revocable without a request", driver.Task{Revocable: true}, specs.LinuxCPU{Shares: u(2)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &oci.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
			for _, o := range resourceOpts(&c.task) {
				if err := o(context.Background(), nil, &containers.Container{}, s); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.Linux.Resources.CPU; got == nil || !reflect.DeepEqual(*got, c.want) {
				t.Fatalf("cpu %+v, want %+v", got, c.want)
			}
		})
	}
}
