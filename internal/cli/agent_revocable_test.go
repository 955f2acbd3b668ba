package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
