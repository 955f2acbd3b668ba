package crilog

import (
	"bytes"
	"errors"
	"io"
)

// headerLen is enough of a line to read a record's time, stream and tag.
const headerLen = 64

// TailOffset returns where a Reader must start in a log of size bytes to return its last
// n lines of the selected stream(s): just after the record that ends the line before
// them, found by reading backwards in blocks. Only records that end a line (F, or raw
// lines) of a selected stream count; a line begun before that offset by partial records
// of the other stream is returned from where the offset cuts it.
func TailOffset(f io.ReaderAt, size int64, n int, opts Options) (int64, error) {
	off, _, err := TailLines(f, size, n, opts)
	return off, err
}

// TailLines is TailOffset that also returns how many lines of the selected stream(s)
// follow the offset: n, or fewer when the log holds fewer (the offset is then 0), so a
// reader of a log in several files knows how many lines to look for in the file before.
func TailLines(f io.ReaderAt, size int64, n int, opts Options) (int64, int, error) {
	if n <= 0 || size == 0 {
		return 0, 0, nil
	}
	const block = 32 << 10
	buf := make([]byte, block)
	head := make([]byte, headerLen)
	// lineEnd is where the line being looked at ends (its newline, or the end of a last
	// line without one, which the Reader returns as a line too).
	lineEnd := size
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return 0, 0, err
	}
	if last[0] == '\n' {
		lineEnd = size - 1
	}
	count := 0
	// ends reports whether the line [start, lineEnd) is the (n+1)th line of the stream
	// from the end.
	ends := func(start int64) (bool, error) {
		h := head[:min(int64(headerLen), lineEnd-start)]
		if _, err := f.ReadAt(h, start); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		rec := Parse(h) // the text may be cut: only the stream and the tag matter
		if opts.Keeps(rec.Stream) && !rec.Partial {
			count++
		}
		return count == n+1, nil
	}
	pos := lineEnd
	for pos > 0 {
		start := max(pos-block, 0)
		chunk := buf[:pos-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for i := bytes.LastIndexByte(chunk, '\n'); i >= 0; i = bytes.LastIndexByte(chunk[:i], '\n') {
			nl := start + int64(i)
			found, err := ends(nl + 1)
			if err != nil {
				return 0, 0, err
			}
			if found {
				return lineEnd + 1, n, nil
			}
			lineEnd = nl
		}
		pos = start
	}
	if found, err := ends(0); err != nil || found {
		return lineEnd + 1, n, err
	}
	return 0, count, nil
}
