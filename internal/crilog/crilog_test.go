package crilog

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// logOf writes the writes (stream, text) through a Writer whose clock ticks a second per
// write, and returns the log.
func logOf(t *testing.T, writes ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w.now = func() time.Time { at = at.Add(time.Second); return at }
	for _, wr := range writes {
		if _, err := w.Stream(wr[0]).Write([]byte(wr[1])); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func read(t *testing.T, log []byte, opts Options) string {
	t.Helper()
	out, err := io.ReadAll(NewReader(bytes.NewReader(log), opts))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestWriterFramesLinesAndPartials(t *testing.T) {
	log := logOf(t, [2]string{Stdout, "out1\nhal"}, [2]string{Stderr, "err1\n"}, [2]string{Stdout, "f\n\n"})
	want := "2026-01-02T03:04:06Z stdout F out1\n" +
		"2026-01-02T03:04:06Z stdout P hal\n" +
		"2026-01-02T03:04:07Z stderr F err1\n" +
		"2026-01-02T03:04:08Z stdout F f\n" +
		"2026-01-02T03:04:08Z stdout F \n"
	if string(log) != want {
		t.Fatalf("log:\n%s\nwant:\n%s", log, want)
	}
}

func TestReaderSelectsStreamsAndJoinsPartials(t *testing.T) {
	log := logOf(t, [2]string{Stdout, "out1\nhal"}, [2]string{Stderr, "err1\n"}, [2]string{Stdout, "f\nout2\n"})
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{}, "out1\nerr1\nhalf\nout2\n"},
		{Options{Stream: Stdout}, "out1\nhalf\nout2\n"},
		{Options{Stream: Stderr}, "err1\n"},
		{Options{Stream: Stderr, Timestamps: true}, "2026-01-02T03:04:07Z err1\n"},
		{Options{Stream: Stdout, Timestamps: true}, "2026-01-02T03:04:06Z out1\n2026-01-02T03:04:06Z half\n2026-01-02T03:04:08Z out2\n"},
	} {
		if got := read(t, log, c.opts); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.opts, got, c.want)
		}
	}
}

func TestLongLineSplitAndJoined(t *testing.T) {
	long := strings.Repeat("x", 2*MaxRecord+10)
	log := logOf(t, [2]string{Stderr, long + "\n"})
	if n := bytes.Count(log, []byte("\n")); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
	if got := read(t, log, Options{Stream: Stderr}); got != long+"\n" {
		t.Fatalf("joined line of %d bytes, want %d", len(got), len(long)+1)
	}
}

func TestRawLinesReadAsStdout(t *testing.T) {
	raw := "old line\n" + strings.Repeat("y", 3*readBuf) + "\nnot 2026 a record\n"
	log := append([]byte(raw), logOf(t, [2]string{Stderr, "new\n"})...)
	if got := read(t, log, Options{Stream: Stdout}); got != raw {
		t.Fatalf("stdout of a raw log: %d bytes, want %d", len(got), len(raw))
	}
	if got := read(t, log, Options{Stream: Stderr}); got != "new\n" {
		t.Fatalf("stderr: %q", got)
	}
	// A log cut inside a record ends with what there is of it.
	if got := read(t, []byte("2026-01-02T03:04:06Z stdout F cut"), Options{}); got != "cut" {
		t.Fatalf("cut record: %q", got)
	}
}

func TestTailOffset(t *testing.T) {
	log := logOf(t, [2]string{Stdout, "o1\n"}, [2]string{Stderr, "e1\n"}, [2]string{Stdout, "o2\no"}, [2]string{Stderr, "e2\n"}, [2]string{Stdout, "3\n"})
	for _, c := range []struct {
		n    int
		opts Options
		want string
	}{
		{1, Options{Stream: Stdout}, "o3\n"},
		// Both streams: the line o3 was begun before e2, which ends the line before the
		// last one; the offset cuts it (as documented).
		{1, Options{}, "3\n"},
		{2, Options{}, "e2\no3\n"},
		{1, Options{Stream: Stderr}, "e2\n"},
		{2, Options{Stream: Stdout}, "o2\no3\n"},
		{3, Options{Stream: Stdout}, "o1\no2\no3\n"},
		{9, Options{Stream: Stderr}, "e1\ne2\n"},
	} {
		off, err := TailOffset(bytes.NewReader(log), int64(len(log)), c.n, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(t, log[off:], c.opts); got != c.want {
			t.Errorf("tail %d %+v: got %q, want %q", c.n, c.opts, got, c.want)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("2026-01-02T03:04:06Z stdout P a\n2026-01-02T03:04:06Z stderr F b\nraw\n"), 1)
	f.Fuzz(func(t *testing.T, log []byte, n int) {
		io.ReadAll(NewReader(bytes.NewReader(log), Options{Timestamps: true}))
		if off, err := TailOffset(bytes.NewReader(log), int64(len(log)), n%50, Options{Stream: Stderr}); err != nil || off < 0 || off > int64(len(log)) {
			t.Fatalf("offset %d, %v", off, err)
		}
	})
}

// benchText is 64 KiB of 80-byte lines, as a chatty task writes them.
var benchText = bytes.Repeat([]byte(strings.Repeat("x", 79)+"\n"), 64<<10/80)

func BenchmarkWriter(b *testing.B) {
	w := NewWriter(io.Discard).Stream(Stdout)
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		w.Write(benchText)
	}
}

func BenchmarkReader(b *testing.B) {
	var log bytes.Buffer
	w := NewWriter(&log)
	for range 16 {
		w.Stream(Stdout).Write(benchText)
		w.Stream(Stderr).Write(benchText)
	}
	b.SetBytes(int64(log.Len()))
	for b.Loop() {
		io.Copy(io.Discard, NewReader(bytes.NewReader(log.Bytes()), Options{Stream: Stderr, Timestamps: true}))
	}
}

// One stream without times passes a partial record on as it comes: a follower sees a
// prompt before its line ends.
func TestReaderPassesPartialsOfOneStream(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, Options{Stream: Stdout})
	go pw.Write(logOf(t, [2]string{Stdout, "Password: "}))
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "Password: " {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	pw.Close()
}
