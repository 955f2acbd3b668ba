package execstream

import (
	"encoding/binary"
	"fmt"
	"io"
)

// ReadFrame reads one whole frame, header included, as it came: what a relay (the
// server's WebSocket bridge for the web console) passes on as one message.
func ReadFrame(r io.Reader) ([]byte, error) {
	typ, p, err := readFrame(r)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 5+len(p))
	out[0] = typ
	binary.BigEndian.PutUint32(out[1:5], uint32(len(p)))
	copy(out[5:], p)
	return out, nil
}

// MaxMessage is the largest whole frame, header included.
const MaxMessage = 5 + maxFrame

// CheckClientFrame checks that msg is exactly one frame a client may send (input, a
// resize, the end of input), so a relay passes on nothing else.
func CheckClientFrame(msg []byte) error {
	if len(msg) < 5 {
		return fmt.Errorf("a frame of %d bytes is shorter than its header", len(msg))
	}
	if n := binary.BigEndian.Uint32(msg[1:5]); int64(n) != int64(len(msg)-5) {
		return fmt.Errorf("a frame says %d bytes but carries %d", n, len(msg)-5)
	}
	switch msg[0] {
	case FrameStdin, FrameResize, FrameStdinEOF:
		return nil
	}
	return fmt.Errorf("frame type %d is not one a client sends", msg[0])
}
