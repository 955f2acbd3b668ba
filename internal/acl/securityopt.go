package acl

import (
	"regexp"
	"strconv"
	"strings"
)

// A `security-opt` parameter chooses how the container is confined: its seccomp filter,
// its AppArmor profile, its SELinux label, no-new-privileges. Turning one off needs
// PrivUnconfined; a profile or label of the spec's choosing needs PrivSecurityProfile,
// since an inline seccomp profile may allow what the default one refuses (unshare of a
// user namespace), an AppArmor profile loaded on the node for a daemon may allow what
// docker-default refuses, and an SELinux type or level may be another's. What needs
// nothing: the runtime's defaults, no-new-privileges, and a seccomp profile named by its
// name only, which a node resolves from its operator's list (--security-profiles) and
// refuses when the name is not on it.

// Seccomp values that mean the runtime's default profile: Docker's "builtin", and
// "default", which berth's driver passes to Docker as no option at all.
const (
	SeccompBuiltin = "builtin"
	SeccompDefault = "default"
)

// DefaultAppArmor is Docker's own AppArmor profile, which it loads itself.
const DefaultAppArmor = "docker-default"

// profileName is the form of a seccomp profile's name: never a path (no slash) nor an
// inline profile (no brace).
var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidProfileName reports whether name is a seccomp profile's name (not a path, not
// JSON, not one of the runtime's own words).
func ValidProfileName(name string) bool {
	return profileName.MatchString(name) && name != SeccompBuiltin && name != SeccompDefault && name != "unconfined"
}

// SplitSecurityOpt splits a security-opt value as dockerd does: at the first "=", else
// (the older form) at the first ":". ok is false for a value with neither.
func SplitSecurityOpt(v string) (key, value string, ok bool) {
	if strings.Contains(v, "=") {
		return strings.Cut(v, "=")
	}
	return strings.Cut(v, ":")
}

// SeccompProfile returns the name of the node's profile a security-opt value asks for
// (seccomp=NAME), or ok false when it names none.
func SeccompProfile(v string) (name string, ok bool) {
	k, val, cut := SplitSecurityOpt(strings.TrimSpace(v))
	if !cut || k != "seccomp" || !ValidProfileName(val) {
		return "", false
	}
	return val, true
}

// securityOptPrivilege judges one security-opt value.
func securityOptPrivilege(v string) string {
	switch v {
	case "no-new-privileges":
		return ""
	case "writable-cgroups", "disable": // dockerd's bare forms: cgroups writable, no SELinux label
		return PrivUnconfined
	}
	k, val, ok := SplitSecurityOpt(v)
	if !ok {
		return PrivSecurityProfile // not a form dockerd knows: it cannot be judged
	}
	switch k {
	case "no-new-privileges":
		return boolOpt(val, true)
	case "writable-cgroups":
		return boolOpt(val, false)
	case "seccomp":
		switch {
		case val == "unconfined":
			return PrivUnconfined
		case val == SeccompBuiltin || val == SeccompDefault || ValidProfileName(val):
			return ""
		}
	case "apparmor":
		switch val {
		case "unconfined":
			return PrivUnconfined
		case DefaultAppArmor:
			return ""
		}
	case "label":
		if val == "disable" {
			return PrivUnconfined
		}
	case "systempaths": // docker run's: /proc and /sys paths unmasked
		if val == "unconfined" {
			return PrivUnconfined
		}
	}
	return PrivSecurityProfile
}

// boolOpt judges a boolean confinement option: safe is the value that confines; the
// other turns a confinement off, and a value that is not a boolean cannot be judged.
func boolOpt(v string, safe bool) string {
	b, err := strconv.ParseBool(v)
	switch {
	case err != nil:
		return PrivSecurityProfile
	case b == safe:
		return ""
	default:
		return PrivUnconfined
	}
}
