package logfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// newLog returns a Rotator of a new log in a temp dir, and the log's path.
func newLog(t *testing.T, lim Limits) (*Rotator, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "task.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRotator(f, path, lim, nil, nil)
	t.Cleanup(func() { r.Close() })
	return r, path
}

// readAll reads the log's files through Open, oldest first.
func readAll(t *testing.T, path string, maxFiles int) string {
	t.Helper()
	files, err := Open(path, maxFiles)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		io.Copy(&b, f)
		f.Close()
	}
	return b.String()
}

func TestLimitsCheck(t *testing.T) {
	for _, c := range []struct {
		lim  Limits
		want string
	}{
		{Limits{MaxBytes: DefaultMaxBytes, MaxFiles: DefaultMaxFiles}, ""},
		{Limits{MaxBytes: MinMaxBytes - 1, MaxFiles: 2}, "--log-max-size"},
		{Limits{MaxBytes: MinMaxBytes, MaxFiles: 1}, "--log-max-files"},
		{Limits{MaxBytes: MinMaxBytes, MaxFiles: MaxMaxFiles + 1}, "--log-max-files"},
	} {
		err := c.lim.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.lim, err, c.want)
		}
	}
}

// Lines written in batches land whole, in order, in files within the limit; a line
// longer than a file fills one of its own; the oldest files are dropped.
func TestRotatorKeepsLinesWhole(t *testing.T) {
	lim := Limits{MaxBytes: 1000, MaxFiles: 4}
	r, path := newLog(t, lim)
	var all strings.Builder
	for i := range 40 {
		batch := fmt.Sprintf("line %03d %s\nline %03db\n", i, strings.Repeat("x", i), i)
		if i == 30 {
			batch = strings.Repeat("y", 1500) + "\n"
		}
		all.WriteString(batch)
		if n, err := r.Write([]byte(batch)); err != nil || n != len(batch) {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	got := readAll(t, path, lim.MaxFiles)
	if !strings.HasSuffix(all.String(), got) || !strings.HasPrefix(got, "line ") {
		t.Fatalf("the files do not hold the end of what was written, from a line's start:\n%s", got)
	}
	for i := range lim.MaxFiles {
		name := path
		if i > 0 {
			name = Rotated(path, i)
		}
		b, err := os.ReadFile(name)
		oneLine := bytes.Count(b, []byte("\n")) == 1 // the long line, alone
		if err != nil || (len(b) > int(lim.MaxBytes) && !oneLine) || !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	if _, err := os.Stat(Rotated(path, lim.MaxFiles)); !os.IsNotExist(err) {
		t.Errorf("a file beyond MaxFiles: %v", err)
	}
}

// A rotation that fails drops what did not fit, and the writer goes on once it can.
func TestRotatorDropsWhenItCannotRotate(t *testing.T) {
	lim := Limits{MaxBytes: 100, MaxFiles: 2}
	r, path := newLog(t, lim)
	line := strings.Repeat("a", 59) + "\n"
	r.Write([]byte(line))
	dir := filepath.Dir(path)
	os.Chmod(dir, 0o500)
	if os.Geteuid() == 0 {
		os.Chmod(dir, 0o700) // root passes modes: take the directory away instead
		os.Rename(dir, dir+".away")
		defer os.Rename(dir+".away", dir)
	}
	if n, err := r.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("a write that cannot rotate: %d %v, want it reported written", n, err)
	}
	if os.Geteuid() == 0 {
		os.Rename(dir+".away", dir)
	} else {
		os.Chmod(dir, 0o700)
	}
	r.Write([]byte("b\n"))
	if got := readAll(t, path, lim.MaxFiles); got != line+"b\n" {
		t.Fatalf("log %q", got)
	}
}

// A follower that falls more than MaxFiles rotations behind goes on from the oldest file
// left; one that keeps up reads every line once.
func TestFollowerAcrossRotations(t *testing.T) {
	lim := Limits{MaxBytes: 100, MaxFiles: 3}
	r, path := newLog(t, lim)
	files, err := Open(path, lim.MaxFiles)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fo := NewFollower(ctx, path, lim.MaxFiles, files, time.Millisecond)
	defer fo.Close()
	line := func(i int) string { return fmt.Sprintf("%03d %s\n", i, strings.Repeat("z", 45)) } // 50 bytes: two a file
	read := func(want string) {
		t.Helper()
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(fo, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q, %v; want %q", buf, err, want)
		}
	}
	// Keeping up: a rotation after each two lines.
	for i := range 6 {
		r.Write([]byte(line(i)))
		read(line(i))
	}
	// Falling behind: 5 files' worth, of which 3 are kept.
	for i := 6; i < 16; i++ {
		r.Write([]byte(line(i)))
	}
	read(line(10) + line(11) + line(12) + line(13) + line(14) + line(15))
}

// Closing a follower from another goroutine ends the Read that waits for more.
func TestFollowerClosedWhileReading(t *testing.T) {
	_, path := newLog(t, Limits{MaxBytes: 100, MaxFiles: 2})
	files, err := Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	fo := NewFollower(context.Background(), path, 2, files, time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := fo.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	fo.Close()
	if err := <-done; err != io.EOF {
		t.Fatalf("read after close: %v", err)
	}
}
