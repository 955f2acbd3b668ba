package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A containerd node offers runc and crun found in PATH and the handlers its operator
// declares, as a set attribute constraints and the scheduler read; a declared binary
// that is not there stops the agent at start, and Docker's runtimes are not declared.
func TestContainerdRuntimesReported(t *testing.T) {
	dir := t.TempDir()
	kata := filepath.Join(dir, "kata-runtime")
	if err := os.WriteFile(kata, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"runc", "crun"} { // stand-ins, so the test does not depend on the host
		if err := os.WriteFile(filepath.Join(dir, bin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	cfg := Config{ServerURLs: []string{"https://127.0.0.1:1"}, DataDir: t.TempDir(), NodeName: "n1",
		ContainerRuntime: RuntimeContainerd, ContainerdAddress: filepath.Join(dir, "none.sock"),
		ContainerRuntimes: []string{"kata=" + kata}, Logger: slog.New(slog.DiscardHandler)}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.openContainerd()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a.containerRuntimes = c.Runtimes()
	n := &v4.Node{}
	a.describeRuntimes(n)
	want := []string{"crun", "kata", "runc"}
	if got := n.Spec.Attributes.Set[v4.AttrContainerRuntimes]; !slices.Equal(got, want) {
		t.Fatalf("attribute %v", got)
	}

	cfg.ContainerRuntimes = []string{"kata=" + filepath.Join(dir, "missing")}
	if a, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.openContainerd(); err == nil || !strings.Contains(err.Error(), "--container-runtimes: runtime kata: binary") {
		t.Errorf("a missing binary: %v", err)
	}
	cfg.ContainerRuntime = RuntimeDocker
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "daemon.json") {
		t.Errorf("declared for Docker: %v", err)
	}

	// A node without a container driver reports no runtimes, not an empty set.
	a.containerRuntimes = nil
	n = &v4.Node{}
	if a.describeRuntimes(n); n.Spec.Attributes.Set != nil {
		t.Errorf("set %v", n.Spec.Attributes.Set)
	}
}
