package v4

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Volume limits. A volume's spec is input from whoever may write volumes in its
// namespace and reaches a plugin running as root on every node, so every string, map and
// list is bounded; the CSI spec's own limits are used where it sets one.
const (
	maxPluginNameLen       = 63 // CSI: a plugin name is at most 63 characters
	maxExternalIDLen       = 128
	maxVolumeParameters    = 64
	maxVolumeParamKeyLen   = 253
	maxVolumeParamValueLen = 4096
	maxVolumeParamBytes    = 16 << 10 // all keys and values together
	maxMountFlags          = 32
	maxMountFlagLen        = 256
	maxFSTypeLen           = 32
	maxTopologies          = 16
	maxTopologySegments    = 16
	maxSegmentKeyLen       = 253
	maxSegmentValueLen     = 63 // CSI: a segment value is at most 63 characters
)

var (
	// pluginNamePattern is domain-name notation, as CSI requires of plugin names.
	pluginNamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
	fsTypePattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	segmentValPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// printable refuses control characters, which would forge lines in logs and events.
	printable = regexp.MustCompile(`^[^\x00-\x1f\x7f]*$`)
)

// forbiddenMountFlags would let a volume's writer weaken the node: set-uid binaries and
// device nodes on the volume, or mounts that are not of the volume at all.
var forbiddenMountFlags = []string{"suid", "dev", "bind", "rbind", "remount", "move",
	"shared", "rshared", "slave", "rslave", "private", "rprivate", "unbindable", "runbindable"}

// defaultVolume fills the access and attachment modes and normalises their case.
func defaultVolume(v *CSIVolume) {
	s := &v.Spec
	s.AccessMode = canon(s.AccessMode, AccessModes()...)
	if s.AccessMode == "" {
		s.AccessMode = AccessSingleNodeWriter
	}
	s.AttachmentMode = canon(s.AttachmentMode, AttachFileSystem, AttachBlockDevice)
	if s.AttachmentMode == "" {
		s.AttachmentMode = AttachFileSystem
	}
}

// checkCSIPluginName checks a CSI plugin's name, which the agent also uses as a
// directory name under its plugin directory: a domain name has no '/' and is never "..".
func checkCSIPluginName(p, name string, errs *FieldErrors) {
	switch {
	case name == "":
		errs.add(p, "required: the CSI plugin's name, such as \"hostpath.csi.k8s.io\"")
	case len(name) > maxPluginNameLen || !pluginNamePattern.MatchString(name):
		errs.add(p, "must be at most %d letters, digits, '.' and '-' (a domain name), got %q", maxPluginNameLen, truncate(name, 80))
	}
}

func validateVolume(v *CSIVolume, errs *FieldErrors) {
	s := &v.Spec
	checkCSIPluginName("spec.plugin", s.Plugin, errs)
	if len(s.ExternalID) > maxExternalIDLen || !printable.MatchString(s.ExternalID) {
		errs.add("spec.externalID", "must be at most %d characters without control characters", maxExternalIDLen)
	}
	if s.ExternalID != "" && s.Capacity != nil {
		errs.add("spec.capacity", "must be empty with spec.externalID: an existing volume has its size")
	}
	validateVolumeCapacity(s.Capacity, errs)
	oneOf("spec.accessMode", s.AccessMode, errs, AccessModes()...)
	oneOf("spec.attachmentMode", s.AttachmentMode, errs, AttachFileSystem, AttachBlockDevice)
	validateMountOptions(s, errs)
	if t := s.Topology; t != nil {
		validateTopologies("spec.topology.required", t.Required, errs)
		validateTopologies("spec.topology.preferred", t.Preferred, errs)
	}
	validateVolumeParameters(s.Parameters, errs)
	if s.Secrets != nil {
		checkDataName("spec.secrets.name", s.Secrets.Name, errs)
	}
}

func validateVolumeCapacity(c *VolumeCapacity, errs *FieldErrors) {
	if c == nil {
		return
	}
	if c.Min == "" && c.Max == "" {
		errs.add("spec.capacity", "must give min, max or both")
		return
	}
	lo, errLo := ParseVolumeSize(c.Min)
	if errLo != nil {
		errs.add("spec.capacity.min", "%v", errLo)
	}
	hi, errHi := ParseVolumeSize(c.Max)
	if errHi != nil {
		errs.add("spec.capacity.max", "%v", errHi)
	}
	if errLo == nil && errHi == nil && hi > 0 && lo > hi {
		errs.add("spec.capacity", "min %s is larger than max %s", c.Min, c.Max)
	}
}

// maxVolumeSize bounds a size so that plugins never see an overflowed int64.
const maxVolumeSize = 1 << 60 // 1 EiB

// volumeUnits are the size suffixes: SI (K, M, G, T, P; with or without B) and binary
// (Ki … Pi; with or without B).
var volumeUnits = map[string]int64{"": 1, "B": 1,
	"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
}

// ParseVolumeSize reads a size such as "1G" (10⁹ bytes), "500Mi" or "4096"; "" is 0.
func ParseVolumeSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	unit, ok := volumeUnits[s[i:]]
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if i == 0 || !ok || err != nil {
		return 0, fmt.Errorf("must be a whole number with an optional unit (K, M, G, T, P or Ki … Pi), got %q", truncate(s, 40))
	}
	if n > maxVolumeSize/unit {
		return 0, fmt.Errorf("must be at most 1 EiB, got %q", s)
	}
	return n * unit, nil
}

func validateMountOptions(s *VolumeSpec, errs *FieldErrors) {
	m := s.MountOptions
	if m == nil {
		return
	}
	if s.AttachmentMode == AttachBlockDevice && (m.FSType != "" || len(m.Flags) > 0) {
		errs.add("spec.mountOptions", "must be empty for a block-device volume: it is not mounted")
	}
	if m.FSType != "" && (len(m.FSType) > maxFSTypeLen || !fsTypePattern.MatchString(m.FSType)) {
		errs.add("spec.mountOptions.fsType", "must be at most %d lowercase letters, digits, '.', '_' and '-', got %q", maxFSTypeLen, truncate(m.FSType, 40))
	}
	if len(m.Flags) > maxMountFlags {
		errs.add("spec.mountOptions.flags", "must have at most %d entries, got %d", maxMountFlags, len(m.Flags))
		return
	}
	for i, f := range m.Flags {
		p := fmt.Sprintf("spec.mountOptions.flags[%d]", i)
		name, _, _ := strings.Cut(f, "=")
		switch {
		case f == "" || len(f) > maxMountFlagLen || !printable.MatchString(f):
			errs.add(p, "must be 1 to %d characters without control characters", maxMountFlagLen)
		case strings.Contains(f, ","):
			errs.add(p, "must be one option (no ','), got %q", truncate(f, 80))
		case slices.Contains(forbiddenMountFlags, strings.ToLower(name)):
			errs.add(p, "%q is not allowed: it would weaken the node (set-uid files, device nodes or other mounts)", name)
		}
	}
}

func validateTopologies(p string, ts []VolumeTopology, errs *FieldErrors) {
	if len(ts) > maxTopologies {
		errs.add(p, "must have at most %d entries, got %d", maxTopologies, len(ts))
		return
	}
	for i, t := range ts {
		tp := fmt.Sprintf("%s[%d].segments", p, i)
		switch {
		case len(t.Segments) == 0:
			errs.add(tp, "required: at least one segment")
		case len(t.Segments) > maxTopologySegments:
			errs.add(tp, "must have at most %d segments, got %d", maxTopologySegments, len(t.Segments))
			continue
		}
		for _, k := range sortedStringKeys(t.Segments) {
			v := t.Segments[k]
			kp := joinKey(tp, k)
			if len(k) > maxSegmentKeyLen || !labelKeyPattern.MatchString(k) {
				errs.add(kp, "key must be at most %d letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit", maxSegmentKeyLen)
			}
			if len(v) > maxSegmentValueLen || !segmentValPattern.MatchString(v) {
				errs.add(kp, "value must be 1 to %d letters, digits, '.', '_' or '-', starting and ending with a letter or digit", maxSegmentValueLen)
			}
		}
	}
}

func validateVolumeParameters(params map[string]string, errs *FieldErrors) {
	if len(params) > maxVolumeParameters {
		errs.add("spec.parameters", "must have at most %d entries, got %d", maxVolumeParameters, len(params))
		return
	}
	total := 0
	for _, k := range sortedStringKeys(params) {
		v := params[k]
		total += len(k) + len(v)
		kp := joinKey("spec.parameters", k)
		if k == "" || len(k) > maxVolumeParamKeyLen || !printable.MatchString(k) {
			errs.add(kp, "key must be 1 to %d characters without control characters", maxVolumeParamKeyLen)
		}
		if len(v) > maxVolumeParamValueLen || !printable.MatchString(v) {
			errs.add(kp, "value must be at most %d characters without control characters", maxVolumeParamValueLen)
		}
	}
	if total > maxVolumeParamBytes {
		errs.add("spec.parameters", "must total at most %d bytes of keys and values, got %d", maxVolumeParamBytes, total)
	}
}
