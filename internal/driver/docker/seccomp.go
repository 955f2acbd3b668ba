package docker

import (
	"fmt"

	"github.com/berthhq/berth/internal/acl"
)

// resolveSeccomp turns a security-opt value into what dockerd is given. A spec names a
// seccomp profile, never sends one (docs/security.md, "Workload privilege"): a name of
// the node's profiles (the agent's --security-profiles) becomes that profile's JSON,
// which is how dockerd takes a custom profile; builtin and default become no option at
// all, so that the daemon's own default applies (Docker knows no "default", and
// "builtin" would override a stricter profile its operator set with --seccomp-profile);
// unconfined passes (the guard let it through with --allow-privileged). Anything else,
// an inline profile or a path among them, is an error: keep is false for a value to drop.
func resolveSeccomp(v string, profiles map[string]string) (out string, keep bool, err error) {
	k, val, ok := acl.SplitSecurityOpt(v)
	if !ok || k != "seccomp" {
		return v, true, nil
	}
	switch val {
	case acl.SeccompBuiltin, acl.SeccompDefault:
		return "", false, nil
	case "unconfined":
		return v, true, nil
	}
	if profile, ok := profiles[val]; ok && acl.ValidProfileName(val) {
		return "seccomp=" + profile, true, nil
	}
	if !acl.ValidProfileName(val) {
		return "", false, fmt.Errorf("a seccomp profile is named, not given inline or as a path (the node's agent lists them: --security-profiles)")
	}
	return "", false, fmt.Errorf("seccomp profile %q is not among this node's profiles (its agent's --security-profiles)", val)
}
