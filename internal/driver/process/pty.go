package process

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	v4 "github.com/berthhq/berth/api/v4"
)

// openPTY opens a new pseudo-terminal: its master, which the driver reads and writes, and
// its slave, which becomes the command's terminal. The master stays in the runtime's
// poller (its descriptor is only reached through SyscallConn), so closing it ends a Read
// blocked on it.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open a terminal: %w", err)
	}
	var n uint32
	err = control(master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
			return err
		}
		var err error
		n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
		return err
	})
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open a terminal: %w", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open a terminal: %w", err)
	}
	return master, slave, nil
}

// setTermSize sets the terminal's size, which its programs read (and get SIGWINCH for).
func setTermSize(master *os.File, sz v4.TermSize) error {
	return control(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: sz.Rows, Col: sz.Cols})
	})
}

// control runs fn on f's descriptor without taking it out of the poller (as Fd would).
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var fnErr error
	if err := rc.Control(func(fd uintptr) { fnErr = fn(int(fd)) }); err != nil {
		return err
	}
	return fnErr
}
