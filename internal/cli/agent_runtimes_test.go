package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// --container-runtimes, or container-runtimes in the config file, declare containerd's
// handlers; with Docker they are refused (its runtimes are its daemon.json's).
func TestAgentContainerRuntimes(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(conf, []byte("server: http://a:7470\ntoken: t\ncontainer-runtime: containerd\ncontainer-runtimes: [crun=/usr/bin/crun, runsc=shim:io.containerd.runsc.v1]\n"), 0o600)
	f, cmd, o, err := agentConfigOf(t, nil, "--config", conf)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := f.agentConfig(cmd, o)
	if err != nil || !slices.Equal(cfg.ContainerRuntimes, []string{"crun=/usr/bin/crun", "runsc=shim:io.containerd.runsc.v1"}) {
		t.Fatalf("from the file: %v %v", cfg.ContainerRuntimes, err)
	}
	f, cmd, o, _ = agentConfigOf(t, nil, "--config", conf, "--container-runtimes", "kata=/opt/kata/bin/kata-runtime")
	if cfg, _, err = f.agentConfig(cmd, o); err != nil || !slices.Equal(cfg.ContainerRuntimes, []string{"kata=/opt/kata/bin/kata-runtime"}) {
		t.Fatalf("the flag wins: %v %v", cfg.ContainerRuntimes, err)
	}
	f, cmd, o, _ = agentConfigOf(t, nil, "--server", "s", "--token", "t", "--container-runtimes", "crun=/usr/bin/crun")
	if _, _, err := f.agentConfig(cmd, o); err == nil || !strings.Contains(err.Error(), "--container-runtimes: only with --container-runtime containerd") {
		t.Errorf("with Docker: %v", err)
	}
}

// describe shows the pod's runtime under its template.
func TestDescribeRuntime(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/ns-a/applications/web", 200, `{"apiVersion":"v4","kind":"application",
		"metadata":{"name":"web","namespace":"ns-a"},"spec":{"instance":1,"template":{"spec":{"runtime":"crun","networkMode":"HOST",
		"containers":[{"image":"busybox"}]}}},"status":{"phase":"Staging"}}`)
	api.json("GET /v1/namespaces/ns-a/taskgroups", 200, `{"kind":"List","items":[]}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "app", "web", "-n", "ns-a")
	wantContains(t, r.stdout, "Runtime:")
	if !strings.Contains(r.stdout, "crun") {
		t.Errorf("no runtime in\n%s", r.stdout)
	}
}
