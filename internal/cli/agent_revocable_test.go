package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The revocable bounds come from the flags, else the config file (0 included), else the
// conservative defaults (the agent refuses a share outside 0..1 at start).
func TestAgentRevocableFlags(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(conf, []byte("server: s:7470\ntoken: tok\nrevocable-max-fraction: 0\nrevocable-margin: 0.3\nrevocable-interval: 5s\n"), 0o600)
	for _, c := range []struct {
		name           string
		args           []string
		fraction, marg float64
		every          time.Duration
	}{
		{"defaults", []string{"--server", "s:7470", "--token", "tok"}, defaultRevocableMaxFraction, defaultRevocableMargin, 10 * time.Second},
		{"the file", []string{"--config", conf}, 0, 0.3, 5 * time.Second},
		{"flags win", []string{"--config", conf, "--revocable-max-fraction", "0.5", "--revocable-interval", "2s"}, 0.5, 0.3, 2 * time.Second},
	} {
		f, cmd, o, err := agentConfigOf(t, nil, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := f.agentConfig(cmd, o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.RevocableMaxFraction != c.fraction || cfg.RevocableMargin != c.marg || cfg.RevocableInterval != c.every {
			t.Errorf("%s: %v %v %v", c.name, cfg.RevocableMaxFraction, cfg.RevocableMargin, cfg.RevocableInterval)
		}
	}
}

// describe node shows the node's lending report, and says when it is too old to lend.
func TestDescribeNodeRevocable(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	n := &v4.Node{Status: v4.NodeStatus{Revocable: &v4.RevocableStatus{Time: now.Add(-5 * time.Second), UsedCPU: 0.5,
		UsedMemoryMB: 2048, RevocableCPU: 1, RevocableMemoryMB: 4096, MaxFraction: 0.25, Margin: 0.1, Evictions: 2}}}
	var b strings.Builder
	(&describer{w: &b, now: now}).nodeRevocable(n)
	for _, want := range []string{"lends at most 25% of the node above a 10% margin", "owners use 0.5 cpu", "2 evicted", "5s ago"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("%q lacks %q", b.String(), want)
		}
	}
	b.Reset()
	(&describer{w: &b, now: now.Add(time.Hour)}).nodeRevocable(n)
	if !strings.Contains(b.String(), "stale: lends nothing") {
		t.Errorf("a stale report: %q", b.String())
	}
	b.Reset()
	(&describer{w: &b, now: now}).nodeRevocable(&v4.Node{})
	if b.Len() != 0 {
		t.Errorf("no report: %q", b.String())
	}
}
