package flexvolume

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// isMountPoint reports whether dir is a mount point, from the kernel's mount table: a
// bind mount of the same file system has the device of its parent, so comparing devices
// would miss it.
func isMountPoint(mountinfo, dir string) (bool, error) {
	want := filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(want); err == nil {
		want = real
	}
	f, err := os.Open(mountinfo)
	if err != nil {
		return false, fmt.Errorf("read the mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the fifth
		// field is the mount point, with spaces and the like octal-escaped.
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && unescapeOctal(fields[4]) == want {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read the mount table: %w", err)
	}
	return false, nil
}

// unescapeOctal undoes the kernel's \NNN escapes of a mount table's path.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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
