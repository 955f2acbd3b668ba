package cli

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
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
