package v4

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// MaxEmptyDirMB bounds an emptyDir's sizeLimit (16 TiB): a number past it is a mistake,
// and a bound keeps the tmpfs option and every sum of limits finite.
const MaxEmptyDirMB = 16 << 20

// MaxVolumeFileMode is the largest mode of a configMap or secret volume's file (rwx for
// owner, group and others: no setuid, setgid or sticky bit).
const MaxVolumeFileMode = 0o777

// maxVolumeItemPath bounds the path of a configMap or secret volume's item.
const maxVolumeItemPath = 1024

// validateEmptyDir checks an emptyDir volume: its medium, its size limit (a positive
// number of MB, required in memory), and that a memory volume fits in the pod's memory,
// since its pages count in the memory of the task that writes them.
func validateEmptyDir(p string, e *EmptyDirVolume, pod *PodSpec, errs *FieldErrors) {
	oneOf(p+".medium", e.Medium, errs, MediumDisk, MediumMemory)
	size, ok := emptyDirSize(p+".sizeLimit", e.SizeLimit, errs)
	if !ok {
		return
	}
	if e.Medium != MediumMemory {
		return
	}
	if size == 0 {
		errs.add(p+".sizeLimit", "required for a Memory emptyDir: the tmpfs's size in MB")
		return
	}
	if mem, all := podMemory(pod); all && size > mem {
		errs.add(p+".sizeLimit", "an emptyDir memory limit over the pod's memory: %g MB, the tasks' limits.memory add up to %g MB", size, mem)
	}
}

// emptyDirSize parses a sizeLimit in MB: 0 when unset; false when it is refused.
func emptyDirSize(p string, q Quantity, errs *FieldErrors) (float64, bool) {
	if q == "" {
		return 0, true
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	switch {
	case err != nil || f != f:
		errs.add(p, "must be a number of MB, got %q", truncate(string(q), 40))
	case f <= 0:
		errs.add(p, "must be a positive number of MB, got %q", truncate(string(q), 40))
	case f > MaxEmptyDirMB:
		errs.add(p, "must be at most %d MB, got %q", MaxEmptyDirMB, truncate(string(q), 40))
	default:
		return f, true
	}
	return 0, false
}

// podMemory is the sum of the tasks' limits.memory in MB, and whether every task has one
// (a task without a limit leaves the pod's memory unbounded).
func podMemory(pod *PodSpec) (float64, bool) {
	var sum float64
	limit := func(r *Resources) bool {
		if r == nil || r.Limits == nil || r.Limits.Memory == "" {
			return false
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(string(r.Limits.Memory)), 64)
		if err != nil || f <= 0 {
			return false // unlimited (-1, 0) or refused elsewhere
		}
		sum += f
		return true
	}
	for i := range pod.Containers {
		if !limit(pod.Containers[i].Resources) {
			return 0, false
		}
	}
	for i := range pod.Processes {
		if !limit(pod.Processes[i].Resources) {
			return 0, false
		}
	}
	return sum, len(pod.Containers)+len(pod.Processes) > 0
}

// validateConfigMapVolume checks a configMap volume.
func validateConfigMapVolume(p string, c *ConfigMapVolume, errs *FieldErrors) {
	checkDataName(p+".name", c.Name, errs)
	validateVolumeItems(p, c.Items, c.DefaultMode, errs)
}

// validateSecretVolume checks a secret volume.
func validateSecretVolume(p string, s *SecretVolume, errs *FieldErrors) {
	checkDataName(p+".secretName", s.SecretName, errs)
	validateVolumeItems(p, s.Items, s.DefaultMode, errs)
}

// validateVolumeItems checks a configMap or secret volume's items and modes. An item's
// path is where the agent (root) writes the key in the volume's directory, so it must
// stay there: relative, clean, without a '..' segment, and not starting with "..", which
// names the agent's own entries (..data, the timestamped directories); two items never
// write one file, nor a file where another needs a directory.
func validateVolumeItems(p string, items []KeyToPath, defaultMode *int, errs *FieldErrors) {
	checkFileMode(p+".defaultMode", defaultMode, errs)
	if len(items) > MaxVolumeItems {
		errs.add(p+".items", "at most %d items, got %d", MaxVolumeItems, len(items))
		return
	}
	paths := map[string]string{} // clean path -> field of its item
	for i, it := range items {
		ip := fmt.Sprintf("%s.items[%d]", p, i)
		if it.Key == "" {
			errs.add(ip+".key", "required")
		} else {
			validateDataKey(ip+".key", it.Key, errs)
		}
		checkFileMode(ip+".mode", it.Mode, errs)
		if checkItemPath(ip+".path", it.Path, errs) {
			claimItemPath(ip+".path", it.Path, paths, errs)
		}
	}
}

// checkItemPath reports whether an item's path is one the agent may write.
func checkItemPath(p, v string, errs *FieldErrors) bool {
	switch {
	case v == "":
		errs.add(p, "required")
	case len(v) > maxVolumeItemPath:
		errs.add(p, "must be at most %d bytes, got %d", maxVolumeItemPath, len(v))
	case strings.IndexByte(v, 0) >= 0:
		errs.add(p, "must not contain a NUL byte")
	case path.IsAbs(v):
		errs.add(p, "must be a path relative to the volume, got %q", truncate(v, 80))
	case HasDotDot(v):
		errs.add(p, "must not contain a '..' segment, got %q", truncate(v, 80))
	case path.Clean(v) != v || v == ".":
		errs.add(p, "must be a clean path (no '.' segment, '//' or trailing '/'), got %q", truncate(v, 80))
	case strings.HasPrefix(v, ".."):
		errs.add(p, "must not start with '..', which names the volume's own entries (..data), got %q", truncate(v, 80))
	default:
		return true
	}
	return false
}

// claimItemPath refuses a path another item writes, or one that is the directory of
// another's file.
func claimItemPath(p, v string, paths map[string]string, errs *FieldErrors) {
	if other, dup := paths[v]; dup {
		errs.add(p, "%q is also the path of %s", truncate(v, 80), other)
		return
	}
	for q, other := range paths {
		if strings.HasPrefix(q, v+"/") || strings.HasPrefix(v, q+"/") {
			errs.add(p, "%q and %q (%s) would be a file and a directory at once", truncate(v, 80), truncate(q, 80), other)
			return
		}
	}
	paths[v] = p
}

func checkFileMode(p string, m *int, errs *FieldErrors) {
	if m != nil && (*m < 0 || *m > MaxVolumeFileMode) {
		errs.add(p, "must be a file mode from 0 to 0777 (511 in JSON's decimal), got %d", *m)
	}
}
