package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	v4 "github.com/berthhq/berth/api/v4"
)

// The local terminal of `berth exec --tty`, with termios through x/sys/unix (already a
// dependency) rather than adding golang.org/x/term for three calls.

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// makeRaw puts the terminal in raw mode (as cfmakeraw) and returns what restores it.
func makeRaw(f *os.File) (func(), error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("read the terminal settings: %w", err)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, fmt.Errorf("set the terminal to raw mode: %w", err)
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// watchSize sends the terminal's size now and on every SIGWINCH until stop is called.
func watchSize(f *os.File) (<-chan v4.TermSize, func()) {
	out := make(chan v4.TermSize, 1)
	send := func() {
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return
		}
		select {
		case out <- v4.TermSize{Rows: ws.Row, Cols: ws.Col}:
		default: // the previous size is not sent yet; this one follows at the next signal
		}
	}
	send()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-sig:
				send()
			}
		}
	}()
	return out, func() {
		signal.Stop(sig)
		close(done)
		<-finished
	}
}
