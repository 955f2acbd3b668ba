package shim

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/berthhq/berth/internal/logfile"
)

// logWriter returns where the task's records go: the log on the shim's descriptor 1, or
// a Rotator of it when the spec sets limits. The Rotator gets a descriptor of its own,
// and at each rotation the shim's descriptors 1 and 2 are pointed at the new file too:
// a shim holding the old one open would keep a dropped file's space in use, and what the
// Go runtime itself writes (a crash) goes to the live log.
func (s Spec) logWriter() (io.Writer, error) {
	lim := s.logLimits()
	if !lim.Rotates() {
		return os.Stdout, nil
	}
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	f := os.NewFile(uintptr(fd), s.LogPath)
	prepare := func(f *os.File) error {
		if s.Cred == nil {
			return nil
		}
		// The task's user owns its log, as the driver made the first file: a process
		// that opens its own output again (/dev/stdout) is checked against it.
		return f.Chown(int(s.Cred.UID), int(s.Cred.GID))
	}
	swapped := func(f *os.File) {
		unix.Dup3(int(f.Fd()), 1, 0)
		unix.Dup3(int(f.Fd()), 2, 0)
	}
	return logfile.NewRotator(f, s.LogPath, lim, prepare, swapped), nil
}
