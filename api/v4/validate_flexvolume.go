package v4

import (
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// A FlexVolume driver's name is two path elements the agent joins under its plugin
// directory (<dir>/vendor~driver/driver) and runs as root: each part is a plain file name,
// never a separator, "." or "..".
var (
	flexDriverPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	// flexFSType is a file system's name as mount(8) takes it ("ext4", "nfs4", "fuse.sshfs").
	flexFSType = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)
	// flexOptionKey is an option's name: the driver reads it from a JSON object.
	flexOptionKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// FlexReservedPrefix starts the options the agent sets itself (fsType, readwrite, the
// pod's name and the secret's keys): a spec may not set them.
const FlexReservedPrefix = "kubernetes.io/"

// maxFlexOptionKey bounds an option's name (a label key's bound); maxFlexOptionsTotal
// bounds all options together: the driver gets them as one command-line argument, which
// Linux caps at 128 KiB, with the secret's keys.
const (
	maxFlexOptionKey    = 253
	maxFlexOptionsTotal = 64 << 10
)

// validateFlexVolume checks a flexVolume volume: the driver's name, which becomes a path
// on the node, the file system's name, the options the driver gets and the secret.
func validateFlexVolume(p string, f *FlexVolume, errs *FieldErrors) {
	checkFlexDriver(p+".driver", f.Driver, errs)
	if f.FSType != "" && !flexFSType.MatchString(f.FSType) {
		errs.add(p+".fsType", "must be a file system's name (letters, digits, '.', '_' and '-', at most 32), got %q", truncate(f.FSType, 80))
	}
	if f.SecretRef != nil {
		checkDataName(p+".secretRef.name", f.SecretRef.Name, errs)
	}
	if len(f.Options) > MaxFlexOptions {
		errs.add(p+".options", "at most %d options, got %d", MaxFlexOptions, len(f.Options))
		return
	}
	keys := make([]string, 0, len(f.Options))
	for k := range f.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys) // errors in a stable order
	total := 0
	for _, k := range keys {
		checkFlexOption(p+".options", k, f.Options[k], errs)
		total += len(k) + len(f.Options[k])
	}
	if total > maxFlexOptionsTotal {
		errs.add(p+".options", "the options are at most %d bytes together, got %d", maxFlexOptionsTotal, total)
	}
}

// checkFlexDriver checks "vendor/driver".
func checkFlexDriver(p, d string, errs *FieldErrors) {
	if d == "" {
		errs.add(p, "required: \"vendor/driver\", the driver installed as <volume plugin dir>/vendor~driver/driver")
		return
	}
	vendor, name, ok := strings.Cut(d, "/")
	for _, part := range []string{vendor, name} {
		if !ok || !flexDriverPart.MatchString(part) || part == "." || part == ".." {
			errs.add(p, "must be \"vendor/driver\", each a name of letters, digits, '.', '_' and '-' (at most 63, no other '/'), got %q",
				truncate(d, 80))
			return
		}
	}
}

// checkFlexOption checks one option of the driver.
func checkFlexOption(p, k, v string, errs *FieldErrors) {
	kp := p + "[" + truncate(k, 80) + "]"
	switch {
	case len(k) > maxFlexOptionKey:
		errs.add(kp, "an option's name is at most %d bytes, got %d", maxFlexOptionKey, len(k))
	case !flexOptionKey.MatchString(k):
		errs.add(kp, "an option's name is letters, digits, '.', '_', '/' and '-', starting with a letter or digit")
	case strings.HasPrefix(strings.ToLower(k), FlexReservedPrefix):
		errs.add(kp, "options starting with %q are set by the agent (fsType, readOnly, the pod, secretRef)", FlexReservedPrefix)
	}
	switch {
	case len(v) > MaxFlexOptionSize:
		errs.add(kp, "an option's value is at most %d bytes, got %d", MaxFlexOptionSize, len(v))
	case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
		errs.add(kp, "an option's value must be UTF-8 text without NUL")
	}
}
