// Package execstream is the wire protocol of `berth exec`: a command's stdin, output,
// terminal size and exit status over one HTTP/1.1 connection that the client upgrades
// (Connection: Upgrade, Upgrade: berth-exec.v1) and the server proxies to the agent as it
// is. After the 101 answer both sides exchange frames: one type byte, a big-endian uint32
// length, then that many bytes.
package execstream

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Protocol is the Upgrade token.
const Protocol = "berth-exec.v1"

// Frame types.
const (
	FrameStdin    byte = 0 // client -> agent: input bytes
	FrameStdout   byte = 1 // agent -> client: output bytes
	FrameResize   byte = 2 // client -> agent: JSON v4.TermSize {"rows":R,"cols":C}
	FrameStdinEOF byte = 3 // client -> agent: no more input
	FrameExit     byte = 4 // agent -> client: JSON v4.ExecExit, the last frame
)

// maxFrame bounds a frame's payload, so a peer cannot make the other allocate at will.
const maxFrame = 1 << 20

// chunk is the most bytes of input or output one frame carries.
const chunk = 32 << 10

// frameWriter writes whole frames; it is safe for concurrent use.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (fw *frameWriter) write(typ byte, p []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	hdr := [5]byte{typ}
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := fw.w.Write(append(hdr[:], p...)); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

func (fw *frameWriter) writeJSON(typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	return fw.write(typ, b)
}

// readFrame reads one frame.
func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is over the limit of %d", n, maxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, fmt.Errorf("read frame: %w", errors.Join(err, io.ErrUnexpectedEOF))
	}
	return hdr[0], p, nil
}

// streamWriter turns writes into frames of one type.
type streamWriter struct {
	fw  *frameWriter
	typ byte
}

func (s streamWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), chunk)
		if err := s.fw.write(s.typ, p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}
