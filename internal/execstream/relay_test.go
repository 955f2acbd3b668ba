package execstream

import (
	"bytes"
	"testing"
)

func TestReadFrameAndCheckClientFrame(t *testing.T) {
	var buf bytes.Buffer
	fw := &frameWriter{w: &buf}
	if err := fw.write(FrameStdin, []byte("ls\n")); err != nil {
		t.Fatal(err)
	}
	msg, err := ReadFrame(&buf)
	if err != nil || !bytes.Equal(msg, []byte{FrameStdin, 0, 0, 0, 3, 'l', 's', '\n'}) {
		t.Fatalf("ReadFrame: %v %v", msg, err)
	}
	tests := []struct {
		name string
		msg  []byte
		ok   bool
	}{
		{"input", msg, true},
		{"end of input", []byte{FrameStdinEOF, 0, 0, 0, 0}, true},
		{"resize", append([]byte{FrameResize, 0, 0, 0, 2}, "{}"...), true},
		{"short", []byte{FrameStdin, 0, 0}, false},
		{"length too long", []byte{FrameStdin, 0, 0, 0, 9, 'x'}, false},
		{"two frames", append(bytes.Clone(msg), msg...), false},
		{"output from a client", []byte{FrameStdout, 0, 0, 0, 0}, false},
		{"exit from a client", []byte{FrameExit, 0, 0, 0, 0}, false},
	}
	for _, tt := range tests {
		if err := CheckClientFrame(tt.msg); (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// FuzzCheckClientFrame: what the check accepts is exactly one whole frame, which the
// agent's reader reads back as it is.
func FuzzCheckClientFrame(f *testing.F) {
	f.Add([]byte{FrameStdin, 0, 0, 0, 1, 'x'})
	f.Add([]byte{FrameResize, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{FrameExit, 0, 0, 0, 0})
	f.Add([]byte{FrameStdin, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, msg []byte) {
		if CheckClientFrame(msg) != nil {
			return
		}
		r := bytes.NewReader(msg)
		got, err := ReadFrame(r)
		if err != nil || !bytes.Equal(got, msg) || r.Len() != 0 {
			t.Fatalf("accepted %v, read back %v %v with %d left", msg, got, err, r.Len())
		}
	})
}
