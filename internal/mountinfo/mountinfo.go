// Package mountinfo reads the kernel's mount table (proc(5), /proc/<pid>/mountinfo): the
// mount points at or below a directory, and whether a directory is one. The table is the
// only sure answer: a bind mount of the same file system has its parent's device, so
// comparing devices would miss it.
package mountinfo

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Self is the mount table of the calling process's mount namespace.
const Self = "/proc/self/mountinfo"

// Below returns the mount points at dir or below it in table, deepest first (a mount
// inside another goes before it, the order to unmount them in), each once.
func Below(table, dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	prefix := strings.TrimSuffix(dir, "/") + "/" // "/" is its own prefix
	var out []string
	err := Scan(table, func(m Mount) bool {
		if m.Point == dir || strings.HasPrefix(m.Point, prefix) {
			out = append(out, m.Point)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(strings.Count(b, "/")-strings.Count(a, "/"), strings.Compare(a, b))
	})
	return slices.Compact(out), nil
}

// IsMountPoint reports whether dir (cleaned, its links not resolved) is a mount point in
// table.
func IsMountPoint(table, dir string) (bool, error) {
	dir = filepath.Clean(dir)
	found := false
	err := Scan(table, func(m Mount) bool {
		found = m.Point == dir
		return !found
	})
	return found, err
}

// Mount is one line of the mount table.
type Mount struct {
	// Point is the mount point, unescaped.
	Point string
	// Optional are the optional fields ("shared:1", "master:2"): the mount's propagation.
	Optional []string
}

// Shared reports whether the mount propagates to its peer group (rshared).
func (m Mount) Shared() bool {
	return slices.ContainsFunc(m.Optional, func(o string) bool { return strings.HasPrefix(o, "shared:") })
}

// Scan calls f with each mount of table, in the table's order (a later line for the same
// point is a mount over the earlier one), until f returns false.
func Scan(table string, f func(Mount) bool) error {
	file, err := os.Open(table)
	if err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the fifth
		// field is the mount point, with spaces and the like octal-escaped; the optional
		// fields run from the seventh to "-".
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		m := Mount{Point: Unescape(fields[4])}
		if len(fields) > 6 {
			opt := fields[6:]
			if i := slices.Index(opt, "-"); i >= 0 {
				opt = opt[:i]
			}
			m.Optional = opt
		}
		if !f(m) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	return nil
}

// Unescape undoes the kernel's \NNN (octal) escapes of a path in the mount table: \040
// is a space, \011 a tab, \012 a newline, \134 a backslash.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
