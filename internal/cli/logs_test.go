package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/logfile"
)

func TestLogsCommand(t *testing.T) {
	f, url := newFakeAPI(t)
	f.routes["GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.c.1/logs"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("line 1\nline 2\n"))
	}
	r := runCLI(t, url, "", "logs", "0.web.ns-a.c.1", "-n", "ns-a", "-t", "web", "-f", "--tail", "20")
	if r.err != nil || r.stdout != "line 1\nline 2\n" {
		t.Fatalf("logs: %v %q", r.err, r.stdout)
	}
	if got := f.got(); !slices.Equal(got, []string{"GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.c.1/logs?follow=true&tail=20&task=web"}) {
		t.Fatalf("requests: %v", got)
	}
	f.json("GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.c.1/logs", http.StatusBadGateway,
		`{"error":{"code":502,"reason":"BadGateway","message":"cannot reach the agent of task group ns-a/0.web.ns-a.c.1"}}`)
	r = runCLI(t, url, "", "logs", "0.web.ns-a.c.1", "-n", "ns-a")
	if r.err == nil || !strings.Contains(r.err.Error(), "cannot reach the agent") {
		t.Fatalf("502: %v", r.err)
	}
	if r := runCLI(t, url, "", "logs", "x", "--tail", "-1"); r.err == nil {
		t.Fatal("negative --tail accepted")
	}
	if r := runCLI(t, url, "", "logs", "x", "--stdout", "--stderr"); r.err == nil {
		t.Fatal("--stdout with --stderr accepted")
	}
}

func TestLogsCommandSelectsAStream(t *testing.T) {
	f, url := newFakeAPI(t)
	f.routes["GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.c.1/logs"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("2026-11-29T00:00:01Z oops\n"))
	}
	for _, args := range [][]string{{"--stderr", "--timestamps"}, {"--stdout"}} {
		r := runCLI(t, url, "", append([]string{"logs", "0.web.ns-a.c.1", "-n", "ns-a"}, args...)...)
		if r.err != nil || r.stdout != "2026-11-29T00:00:01Z oops\n" {
			t.Fatalf("logs %v: %v %q", args, r.err, r.stdout)
		}
	}
	want := []string{
		"GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.c.1/logs?stream=stderr&timestamps=true",
		"GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.c.1/logs?stream=stdout",
	}
	if got := f.got(); !slices.Equal(got, want) {
		t.Fatalf("requests: %v", got)
	}
}

func TestReloadAndRestartCommands(t *testing.T) {
	f, url := newFakeAPI(t)
	for _, action := range []string{"reload", "restart"} {
		f.json("POST /v1/namespaces/defaultGroup/taskgroups/0.web/actions/"+action, http.StatusNoContent, "")
	}
	r := runCLI(t, url, "", "reload", "0.web", "-t", "web")
	if r.err != nil || r.stdout != "taskgroup/0.web reloaded\n" {
		t.Fatalf("reload: %v %q", r.err, r.stdout)
	}
	r = runCLI(t, url, "", "restart", "0.web")
	if r.err != nil || r.stdout != "taskgroup/0.web restarted\n" {
		t.Fatalf("restart: %v %q", r.err, r.stdout)
	}
	want := []string{
		"POST /v1/namespaces/defaultGroup/taskgroups/0.web/actions/reload?task=web",
		"POST /v1/namespaces/defaultGroup/taskgroups/0.web/actions/restart",
	}
	if got := f.got(); !slices.Equal(got, want) {
		t.Fatalf("requests: %v", got)
	}
}

// agentConfigOf parses `berth agent` args without running the agent.
func agentConfigOf(t *testing.T, vars map[string]string, args ...string) (*agentFlags, *cobra.Command, *options, error) {
	t.Helper()
	o := &options{env: &env{getenv: func(k string) string { return vars[k] }}}
	f := &agentFlags{}
	cmd := &cobra.Command{Use: "agent"}
	f.register(cmd)
	err := cmd.ParseFlags(args)
	return f, cmd, o, err
}

func TestAgentFlagsAndConfigFile(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("  tok-from-file\n"), 0o600)
	conf := filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(`
server: http://a:7470, http://b:7470
token-file: `+tokenFile+`
data-dir: /srv/berth
node-name: from-file
label: {zone: a, rack: r1}
attr-scalar: {cpus: 8}
attr-set: {idc: [sh, bj]}
port-range: [30000-30100]
heartbeat: 5s
log-level: debug
docker: "off"
cni-conf-dir: /etc/cni/berth
allow-privileged: true
host-volumes: [/data, /logs:ro]
default-user: from-file
log-max-size: 1MiB
log-max-files: 3
`), 0o600)
	f, cmd, o, err := agentConfigOf(t, nil, "--config", conf, "--node-name", "from-flag", "--label", "zone=b",
		"--attr-text", "os=linux", "--attr-set", "gpu=a100,h100", "--host-volumes", "/srv", "--log-max-files", "4")
	if err != nil {
		t.Fatal(err)
	}
	cfg, level, err := f.agentConfig(cmd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.ServerURLs, []string{"http://a:7470", "http://b:7470"}) || cfg.Token != "tok-from-file" ||
		cfg.DataDir != "/srv/berth" || cfg.NodeName != "from-flag" || cfg.HeartbeatInterval != 5*time.Second ||
		level.String() != "DEBUG" || cfg.Listen != "0.0.0.0:7471" {
		t.Fatalf("config: %+v level %v", cfg, level)
	}
	if cfg.Labels["zone"] != "b" || cfg.Labels["rack"] != "r1" || cfg.Attributes.Text["os"] != "linux" ||
		cfg.Attributes.Scalar["cpus"] != 8 || !slices.Equal(cfg.Attributes.Set["idc"], []string{"sh", "bj"}) ||
		!slices.Equal(cfg.Attributes.Set["gpu"], []string{"a100", "h100"}) {
		t.Fatalf("labels and attributes: %+v %+v", cfg.Labels, cfg.Attributes)
	}
	if len(cfg.PortRanges) != 1 || cfg.PortRanges[0] != (v4.PortRange{Begin: 30000, End: 30100}) {
		t.Fatalf("port ranges: %+v", cfg.PortRanges)
	}
	if cfg.Docker != "off" || cfg.CNIConfDir != "/etc/cni/berth" || cfg.CNIBinDir != "/usr/lib/cni" || cfg.DockerHost != "" {
		t.Fatalf("docker: %q %q %q %q", cfg.Docker, cfg.CNIConfDir, cfg.CNIBinDir, cfg.DockerHost)
	}

	if !cfg.AllowPrivileged || !slices.Equal(cfg.HostVolumes, []string{"/srv"}) || cfg.DefaultUser != "from-file" {
		t.Fatalf("guard: %v %v %q", cfg.AllowPrivileged, cfg.HostVolumes, cfg.DefaultUser)
	}
	if cfg.LogLimits != (logfile.Limits{MaxBytes: 1 << 20, MaxFiles: 4}) {
		t.Fatalf("log limits: %+v", cfg.LogLimits)
	}

	// Flags alone, the token from the environment.
	f, cmd, o, _ = agentConfigOf(t, map[string]string{"BERTH_JOIN_TOKEN": "env-tok"}, "--server", "s1:7470", "--server", "s2:7470")
	cfg, _, err = f.agentConfig(cmd, o)
	if err != nil || cfg.Token != "env-tok" || len(cfg.ServerURLs) != 2 || cfg.DataDir != defaultAgentDataDir || cfg.Docker != "auto" ||
		cfg.AllowPrivileged || cfg.HostVolumes != nil || cfg.DefaultUser != "" ||
		cfg.LogLimits != (logfile.Limits{MaxBytes: logfile.DefaultMaxBytes, MaxFiles: logfile.DefaultMaxFiles}) {
		t.Fatalf("flags only: %+v %v", cfg, err)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--token", "t"}, "--server"},
		{[]string{"--server", "s", "--token", "t", "--label", "novalue"}, "KEY=VALUE"},
		{[]string{"--server", "s", "--token", "t", "--attr-scalar", "cpus=many"}, "not a number"},
		{[]string{"--server", "s", "--token", "t", "--port-range", "32000-31000"}, "BEGIN-END"},
		{[]string{"--server", "s", "--token", "t", "--log-level", "loud"}, "--log-level"},
		{[]string{"--server", "s", "--token", "t", "--docker", "maybe"}, "--docker"},
		{[]string{"--server", "s", "--token", "t", "--log-max-size", "10 parsecs"}, "--log-max-size"},
		{[]string{"--server", "s", "--token", "t", "--log-max-size", "1KiB"}, "--log-max-size"},
		{[]string{"--server", "s", "--token", "t", "--log-max-files", "1"}, "--log-max-files"},
		{[]string{"--server", "s", "--token", "t", "--log-max-files", "1000"}, "--log-max-files"},
		{[]string{"--server", "s", "--token-file", filepath.Join(dir, "missing")}, "join token"},
	}
	for _, b := range bad {
		f, cmd, o, _ := agentConfigOf(t, nil, b.args...)
		if _, _, err := f.agentConfig(cmd, o); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v: err %v, want %q", b.args, err, b.want)
		}
	}
	os.WriteFile(conf, []byte("servr: x\n"), 0o600)
	f, cmd, o, _ = agentConfigOf(t, nil, "--config", conf)
	if _, _, err := f.agentConfig(cmd, o); err == nil || !strings.Contains(err.Error(), "servr") {
		t.Errorf("unknown key: %v", err)
	}
}

func TestServerJoinTokenFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600)
	r := runCLI(t, "", "", "server", "--data-dir", dir, "--join-token-file", filepath.Join(dir, "empty"))
	if r.err == nil || !strings.Contains(r.err.Error(), "empty") {
		t.Fatalf("empty token file: %v", r.err)
	}
	r = runCLI(t, "", "", "server", "--data-dir", dir, "--join-token", "a", "--join-token-file", "b")
	if r.err == nil {
		t.Fatal("both token flags accepted")
	}
}
