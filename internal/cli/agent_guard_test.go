package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// --security-profiles comes from the flag, else from the config file's key.
func TestAgentSecurityProfiles(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(conf, []byte("security-profiles: [strict=/etc/berth/strict.json, web=/etc/berth/web.json]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--config", conf}, []string{"strict=/etc/berth/strict.json", "web=/etc/berth/web.json"}},
		{[]string{"--config", conf, "--security-profiles", "only=/x.json"}, []string{"only=/x.json"}},
	} {
		f, cmd, o, err := agentConfigOf(t, nil, append([]string{"--server", "https://s:7470", "--token", "t"}, c.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := f.agentConfig(cmd, o)
		if err != nil || !slices.Equal(cfg.SecurityProfiles, c.want) {
			t.Errorf("%v: %v %v, want %v", c.args, cfg.SecurityProfiles, err, c.want)
		}
	}
}
