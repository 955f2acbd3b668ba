package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthhq/berth/internal/acl"
)

// loadSecurityProfiles reads --security-profiles: NAME=FILE entries, each a seccomp
// profile (Docker's JSON) that workloads name with `security-opt seccomp=NAME`. It
// returns each profile's content by name; the files are read once, at the agent's start,
// so that a missing or broken file stops the agent rather than every workload naming it,
// and a workload never makes the agent read a path of its choosing.
func loadSecurityProfiles(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, file, ok := strings.Cut(e, "=")
		name, file = strings.TrimSpace(name), strings.TrimSpace(file)
		switch {
		case !ok || !filepath.IsAbs(file):
			return nil, fmt.Errorf("security profile %q: want NAME=FILE, FILE an absolute path", e)
		case !acl.ValidProfileName(name):
			return nil, fmt.Errorf("security profile %q: the name must be letters, digits, '.', '_' or '-' (at most 63), and not builtin, default or unconfined", e)
		case out[name] != "":
			return nil, fmt.Errorf("security profile %q: %s is listed twice", e, name)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("security profile %s: %w", name, err)
		}
		var profile map[string]any
		if err := json.Unmarshal(data, &profile); err != nil {
			return nil, fmt.Errorf("security profile %s: %s is not a seccomp profile (a JSON object): %w", name, file, err)
		}
		if _, ok := profile["defaultAction"]; !ok {
			return nil, fmt.Errorf("security profile %s: %s has no defaultAction, which every seccomp profile has", name, file)
		}
		out[name] = string(data)
	}
	return out, nil
}
