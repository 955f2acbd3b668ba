package logfile

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// openTries bounds how often Open starts again when a rotation ran while it opened the
// files (a rotation takes microseconds and comes once per MaxBytes written).
const openTries = 5

// Open opens the log at path and its rotated files (up to maxFiles files in all; 1 for a
// log that does not rotate), oldest first, the live file last. The files are one
// snapshot: when a rotation renamed them while they were being opened, they are opened
// again, so no file is read twice or skipped. A live file missing while rotated ones are
// there (between a rotation's rename and its new file) is waited for briefly, then left
// out. The error is os.ErrNotExist's when there is no file at all.
func Open(path string, maxFiles int) ([]*os.File, error) {
	maxFiles = max(maxFiles, 1)
	var files []*os.File
	var err error
	for try := range openTries {
		files, err = openOnce(path, maxFiles)
		if err != nil {
			return nil, err
		}
		if consistent(path, files) {
			break
		}
		if try < openTries-1 {
			closeAll(files)
			time.Sleep(time.Millisecond)
		}
	}
	if len(files) == 0 {
		return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
	}
	slices.Reverse(files)
	return files, nil
}

// openOnce opens the live file (nil when missing) and the rotated ones that follow it,
// newest first, up to the first one missing.
func openOnce(path string, maxFiles int) ([]*os.File, error) {
	live, err := os.Open(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	files := []*os.File{live}
	for i := 1; i < maxFiles; i++ {
		f, err := os.Open(Rotated(path, i))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			closeAll(files)
			return nil, err
		}
		files = append(files, f)
	}
	if live == nil {
		files = files[1:]
	}
	return files, nil
}

// consistent reports whether each file opened is still the one its name names, and the
// live file is there: no rotation ran while they were opened.
func consistent(path string, newestFirst []*os.File) bool {
	if len(newestFirst) > 0 && newestFirst[0].Name() != path {
		return false // no live file: a rotation between its rename and its new file
	}
	for _, f := range newestFirst {
		if !sameFile(f, f.Name()) {
			return false
		}
	}
	return true
}

// sameFile reports whether name names the file f is open on.
func sameFile(f *os.File, name string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(name)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// Follower reads a log's files in order and then follows the live one as it grows,
// across rotations, until its context ends or it is closed; then io.EOF. At the end of
// the live file it looks whether the name still names that file: when a rotation
// renamed it (another file, or a smaller one, by that name), it reads what was left in
// it, then goes on with the file written after it (the rotated file one newer, or the
// live one). Read polls rather than watches: one goroutine fewer, and the caller's Read
// owns the wait.
type Follower struct {
	path     string
	maxFiles int
	poll     time.Duration
	ctx      context.Context
	mu       sync.Mutex
	files    []*os.File // to read, in order; the last is the one followed
	once     sync.Once
	closed   chan struct{}
}

// NewFollower follows the log at path (maxFiles as for Open) from files, oldest first,
// positioned where reading starts; it owns them. poll is how often it looks at a file
// that has no more to read.
func NewFollower(ctx context.Context, path string, maxFiles int, files []*os.File, poll time.Duration) *Follower {
	return &Follower{path: path, maxFiles: max(maxFiles, 1), poll: poll, ctx: ctx, files: files, closed: make(chan struct{})}
}

func (r *Follower) Read(p []byte) (int, error) {
	for {
		n, more, err := r.step(p)
		if !more {
			return n, err
		}
		if err := r.wait(); err != nil {
			return 0, err
		}
	}
}

// step reads what there is, under the lock that Close takes to close the files (a
// follower is closed from another goroutine to end a blocked Read). more: nothing yet,
// wait and step again.
func (r *Follower) step(p []byte) (n int, more bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		select {
		case <-r.closed:
			return 0, false, io.EOF
		default:
		}
		if len(r.files) == 0 {
			if r.files = r.next(nil); len(r.files) == 0 {
				return 0, true, nil
			}
		}
		cur := r.files[0]
		n, err := cur.Read(p)
		if n > 0 {
			return n, false, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		if len(r.files) > 1 {
			cur.Close()
			r.files = r.files[1:]
			continue
		}
		// The end of the followed file: rotated away, or just no more yet?
		next := r.next(cur)
		if next == nil {
			return 0, true, nil
		}
		// Drain what was written to it before the rotation, then go on.
		r.files = append(r.files, next...)
		if n, err := cur.Read(p); n > 0 {
			return n, false, nil
		} else if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
	}
}

// wait sleeps one poll, or returns io.EOF when the follower ends.
func (r *Follower) wait() error {
	t := time.NewTimer(r.poll)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return io.EOF
	case <-r.closed:
		return io.EOF
	case <-t.C:
		return nil
	}
}

// next returns the file written after cur when cur is no longer the live file (nil when
// it still is, or no file is there yet): the rotated file one newer than cur's place now,
// or the live file. A cur no longer found among the rotated files (the follower fell
// more than maxFiles behind, or cur is nil) is followed by the oldest file there.
func (r *Follower) next(cur *os.File) []*os.File {
	if cur != nil && sameFile(cur, r.path) {
		fi, err := cur.Stat()
		off, err2 := cur.Seek(0, io.SeekCurrent)
		if err == nil && err2 == nil && off > fi.Size() {
			// Smaller than what was read: it was truncated (by hand); start over.
			cur.Seek(0, io.SeekStart)
		}
		return nil
	}
	for range openTries {
		place := 0 // cur's index among the rotated files, 0 when not found
		if cur != nil {
			for i := 1; i < r.maxFiles; i++ {
				if sameFile(cur, Rotated(r.path, i)) {
					place = i
					break
				}
			}
		}
		if place == 0 {
			// From the oldest file there: Open's snapshot.
			files, err := Open(r.path, r.maxFiles)
			if err != nil {
				return nil
			}
			return files
		}
		name := r.path
		if place > 1 {
			name = Rotated(r.path, place-1)
		}
		f, err := os.Open(name)
		if err == nil && sameFile(cur, Rotated(r.path, place)) {
			return []*os.File{f}
		}
		if f != nil {
			f.Close()
		}
		time.Sleep(time.Millisecond) // a rotation ran meanwhile (or the live file is not there yet)
	}
	return nil
}

// Close ends the follower and closes its files.
func (r *Follower) Close() error {
	r.once.Do(func() { close(r.closed) })
	r.mu.Lock()
	defer r.mu.Unlock()
	closeAll(r.files)
	r.files = nil
	return nil
}

// Chain reads files (a set Open returned, or its tail) one after the other, and closes
// them all when it is closed.
func Chain(files []*os.File) io.ReadCloser {
	readers := make([]io.Reader, len(files))
	for i, f := range files {
		readers[i] = f
	}
	return &chain{Reader: io.MultiReader(readers...), files: files}
}

type chain struct {
	io.Reader
	files []*os.File
}

func (c *chain) Close() error {
	closeAll(c.files)
	return nil
}

// CloseAll closes files, for a reader that drops some of a set.
func CloseAll(files []*os.File) { closeAll(files) }

// SeekTail returns the files of a set (oldest first) that hold its last n lines, the
// first one moved to where they begin (n <= 0: all of them, from the start); it closes
// the others. Lines are counted from the live file back, each older file asked for those
// still missing; tail says where the last n lines of one file begin and how many it holds
// (up to n).
func SeekTail(files []*os.File, n int, tail func(f *os.File, n int) (int64, int, error)) ([]*os.File, error) {
	if n <= 0 {
		return files, nil
	}
	for i := len(files) - 1; i >= 0; i-- {
		off, found, err := tail(files[i], n)
		if err == nil && found < n && i > 0 {
			n -= found
			continue
		}
		if err == nil {
			_, err = files[i].Seek(off, io.SeekStart)
		}
		closeAll(files[:i])
		if err != nil {
			closeAll(files[i:])
			return nil, err
		}
		return files[i:], nil
	}
	return files, nil
}
