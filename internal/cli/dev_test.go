package cli

import (
	"log/slog"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/daemon"
	"github.com/berthhq/berth/internal/logfile"
)

// berth dev's --node-name and --port-range reach its agent's config, checked before
// anything starts; left out, the agent's defaults apply (the host name, 31000-32000).
func TestDevNodeFlags(t *testing.T) {
	cfg, err := devNodeFlags{nodeName: "dev-b", portRanges: []string{"33000-33099", "34000-34000"}}.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeName != "dev-b" || len(cfg.PortRanges) != 2 || cfg.PortRanges[0] != (v4.PortRange{Begin: 33000, End: 33099}) {
		t.Errorf("config: %q %v", cfg.NodeName, cfg.PortRanges)
	}
	if cfg, err := (devNodeFlags{}).config(); err != nil || cfg.NodeName != "" || cfg.PortRanges != nil {
		t.Errorf("no flags: %q %v %v, want the agent's defaults", cfg.NodeName, cfg.PortRanges, err)
	}
	for _, f := range []devNodeFlags{{nodeName: "Bad_Name"}, {portRanges: []string{"32000-31000"}}, {portRanges: []string{"x"}}} {
		if _, err := f.config(); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v, want an error naming the flag", f, err)
		}
	}
}

func TestDevBanner(t *testing.T) {
	var b strings.Builder
	node := daemon.DevNode{Name: "host-1", DNSAddr: "192.0.2.2:53", ProxyTable: "berth_0123456789ab"}
	devBanner(&b, "127.0.0.1:7470", "/home/u/.berth/dev", node, "cluster.local", "/home/u/.config/berth/config.yaml")
	out := b.String()
	wantContains(t, out, "https://127.0.0.1:7470", "node:     host-1", "/home/u/.berth/dev", "CLI config: /home/u/.config/berth/config.yaml",
		"DNS:      192.0.2.2:53 (SVC.NS.svc.cluster.local", "proxy:    on:", "nft list table ip berth_0123456789ab",
		"berth apply -f examples/", "berth get apps -A", "berth events -w")
	if strings.Contains(out, "BERTH_SERVER") {
		t.Error("a written CLI config needs no BERTH_SERVER hint")
	}
	tests := []struct {
		node daemon.DevNode
		want []string
	}{
		// Without the config file (the user has their own), the banner says what to export.
		{daemon.DevNode{}, []string{"export BERTH_SERVER=https://127.0.0.1:9999 BERTH_CA_CERT=/d/ca.crt", "node:     none", "DNS:      none", "proxy:    none"}},
		// A node whose DNS and proxy are off says so, and which flag turns them on.
		{daemon.DevNode{Name: "n"}, []string{"DNS:      off (--dns-addr)", "proxy:    off: VIPs do not answer here (--service-proxy"}},
		{daemon.DevNode{Name: "n", DNSAddr: "127.0.0.1:40001"}, []string{"DNS:      127.0.0.1:40001", "proxy:    off"}},
	}
	for _, tt := range tests {
		b.Reset()
		devBanner(&b, "127.0.0.1:9999", "/d", tt.node, "cluster.local", "")
		wantContains(t, b.String(), tt.want...)
	}
}

// berth dev's DNS and proxy flags reach its agent's config as the agent's do; when the
// proxy is off by auto, one log line says why and names the flag. (auto's own answer
// depends on the machine: root and nf_tables; serviceProxyAuto is checked against it.)
func TestDevServices(t *testing.T) {
	tests := []struct {
		name      string
		flags     agentDNSFlags
		wantAddr  string
		wantProxy bool
		wantLog   string // "" for no line
	}{
		{"dns off", agentDNSFlags{addr: "off", domain: "cluster.local", proxy: "auto"}, "", false, "--dns-addr off"},
		{"proxy off", agentDNSFlags{addr: "127.0.0.1:5353", domain: "cluster.local", proxy: "off"}, "127.0.0.1:5353", false, ""},
		{"auto", agentDNSFlags{addr: agent.DNSAuto, domain: "cluster.local.", proxy: "auto"}, agent.DNSAuto, false, ""},
	}
	autoOn, why := serviceProxyAuto(agent.DNSAuto)
	for _, tt := range tests {
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, nil))
		var cfg agent.Config
		if err := devServices(&tt.flags, &cfg, func(string) bool { return false }, log); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		wantProxy, wantLog := tt.wantProxy, tt.wantLog
		if tt.name == "auto" {
			wantProxy, wantLog = autoOn, why
			if !autoOn && !strings.Contains(logs.String(), "--service-proxy off") {
				t.Errorf("auto, proxy off: the line names no flag: %s", logs.String())
			}
		}
		if cfg.DNSAddr != tt.wantAddr || cfg.ServiceProxy != wantProxy || cfg.ClusterDomain != "cluster.local" {
			t.Errorf("%s: addr %q proxy %v domain %q; want %q %v cluster.local", tt.name, cfg.DNSAddr, cfg.ServiceProxy, cfg.ClusterDomain, tt.wantAddr, wantProxy)
		}
		if lines := strings.Count(logs.String(), "service proxy off"); (wantLog == "") != (lines == 0) || lines > 1 || !strings.Contains(logs.String(), wantLog) {
			t.Errorf("%s: log %q, want one line with %q (none when empty)", tt.name, logs.String(), wantLog)
		}
	}
}

// berth dev's --log-max-size and --log-max-files reach its agent's config; a bad value
// is refused with the flag named.
func TestDevLogFlags(t *testing.T) {
	var cfg agent.Config
	f := agentLogFlags{maxSize: "2MiB", maxFiles: 3}
	if err := f.apply(&cfg, &agentFile{}, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if cfg.LogLimits != (logfile.Limits{MaxBytes: 2 << 20, MaxFiles: 3}) {
		t.Errorf("limits %+v", cfg.LogLimits)
	}
	for _, bad := range []agentLogFlags{{maxSize: "-1", maxFiles: 3}, {maxSize: "10MiB", maxFiles: 0}} {
		if err := bad.apply(&cfg, &agentFile{}, func(string) bool { return true }); err == nil || !strings.Contains(err.Error(), "--log-max-") {
			t.Errorf("%+v: %v, want an error naming the flag", bad, err)
		}
	}
}
