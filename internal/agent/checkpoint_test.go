package agent

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestCheckpointRoundTripAndAtomicWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	c, err := loadCheckpoint(path, testNode)
	if err != nil {
		t.Fatal(err)
	}
	tg := processTG("0.web.ns-a.c.1")
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31001}}
	if err := c.put(tg, "/pods/x", GPUSharingNone); err != nil {
		t.Fatal(err)
	}
	if err := c.put(processTG("1.web.ns-a.c.1"), "/pods/y", GPUSharingNone); err != nil {
		t.Fatal(err)
	}
	if err := c.remove("ns-a/1.web.ns-a.c.1"); err != nil {
		t.Fatal(err)
	}
	// Only the file itself is in the directory: no temporary file is left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "checkpoint.json" {
		t.Fatalf("directory: %v", entries)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	again, err := loadCheckpoint(path, testNode)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := again.get("ns-a/0.web.ns-a.c.1")
	if !ok || e.PodDir != "/pods/x" || e.KillGracePeriod != 1 || len(e.Ports) != 1 || e.Ports[0].HostPort != 31001 {
		t.Fatalf("reloaded entry: %+v %v", e, ok)
	}
	if keys := again.keys(); len(keys) != 1 {
		t.Fatalf("keys: %v", keys)
	}
}

func TestMachine(t *testing.T) {
	f := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(f, []byte("MemFree:  100 kB\nMemTotal:       16384000 kB\n"), 0o600)
	if mb, err := memTotalMB(f); err != nil || mb != 16000 {
		t.Fatalf("memTotalMB = %v, %v", mb, err)
	}
	if _, err := memTotalMB(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("missing meminfo")
	}
	a := Allocatable(v4.NodeResources{CPU: 8, MemoryMB: 16000, DiskMB: 100000})
	if a.CPU != 7.6 || a.MemoryMB != 15200 || a.DiskMB != 95000 {
		t.Fatalf("allocatable: %+v", a)
	}
	a = Allocatable(v4.NodeResources{CPU: 1, MemoryMB: 512, DiskMB: 1000000})
	if a.CPU != 0.9 || a.MemoryMB != 256 || a.DiskMB != 1000000-10240 {
		t.Fatalf("allocatable of a small machine: %+v", a)
	}
	route := filepath.Join(t.TempDir(), "route")
	os.WriteFile(route, []byte("Iface\tDestination\tGateway\neth1\t0000A8C0\t00000000\neth0\t00000000\t0101A8C0\n"), 0o600)
	if got := defaultRouteInterface(route); got != "eth0" {
		t.Fatalf("default route interface %q", got)
	}
	if ip := detectIP(); net.ParseIP(ip) == nil {
		t.Fatalf("detectIP = %q", ip)
	}
	bound := &net.TCPAddr{IP: net.IPv4zero, Port: 7471}
	if got := advertiseAddr("", bound, "10.0.0.5"); got != "10.0.0.5:7471" {
		t.Fatalf("advertise of 0.0.0.0: %q", got)
	}
	if got := advertiseAddr("", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, "10.0.0.5"); got != "127.0.0.1:9" {
		t.Fatalf("advertise of loopback: %q", got)
	}
	if got := advertiseAddr("agent.example:1", bound, "10.0.0.5"); got != "agent.example:1" {
		t.Fatalf("configured advertise: %q", got)
	}
}

func TestConfigDefaults(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
	a, err := New(Config{ServerURLs: []string{"127.0.0.1:7470"}, Token: "t", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := a.cfg
	if c.NodeName == "" || c.IP == "" || c.Listen != DefaultListen || c.HeartbeatInterval != DefaultHeartbeatInterval ||
		c.ReportInterval != DefaultReportInterval || len(c.PortRanges) != 1 {
		t.Fatalf("defaults: %+v", c)
	}
	if _, err := New(Config{ServerURLs: []string{"ftp://x"}, Token: "t", DataDir: "d"}); err == nil {
		t.Fatal("bad server URL accepted")
	}
	// The join token never travels in the clear.
	if _, err := New(Config{ServerURLs: []string{"https://a:1", "http://b:2"}, Token: "t", DataDir: "d"}); err == nil || !strings.Contains(err.Error(), "https only") {
		t.Fatalf("an http server: %v", err)
	}
}

// The table "berth" is the node's own to remove only where its agent ran before proxy
// tables were named by cluster: a checkpoint that is there but names no table.
func TestCheckpointClaimProxyTable(t *testing.T) {
	tests := []struct {
		name string
		file string // "" for none
		want bool
	}{
		{"fresh data dir", "", false},
		{"older agent", `{"version":1,"node":"n","cluster":"sha256:ab","taskGroups":{}}`, true},
		{"this cluster's table", `{"version":1,"node":"n","taskGroups":{},"proxyTable":"berth_0123456789ab"}`, false},
		{"another table", `{"version":1,"node":"n","taskGroups":{},"proxyTable":"berth_ffffffffffff"}`, false},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "checkpoint.json")
		if tt.file != "" {
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		c, err := loadCheckpoint(path, "n")
		if err != nil {
			t.Fatal(err)
		}
		older, err := c.claimProxyTable("berth_0123456789ab")
		if err != nil || older != tt.want {
			t.Errorf("%s: claim = %v, %v; want %v", tt.name, older, err, tt.want)
		}
		// Recorded: the next start (and the next claim) finds its own table.
		again, err := loadCheckpoint(path, "n")
		if err != nil {
			t.Fatal(err)
		}
		if older, err := again.claimProxyTable("berth_0123456789ab"); err != nil || older {
			t.Errorf("%s: second claim = %v, %v; want false", tt.name, older, err)
		}
	}
}
