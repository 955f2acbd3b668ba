package crilog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"time"
)

// Record is one parsed line of a log.
type Record struct {
	// Time is the record's time as written (RFC3339Nano); empty for a line that is not a
	// record (a log an older berth wrote raw).
	Time    string
	Stream  string
	Partial bool
	Text    []byte
}

// Parse reads one line (without its newline) as a record. A line that is not one (a raw
// line) is stdout text without a time, so logs written before records, or with raw
// lines among them, still read.
func Parse(line []byte) Record {
	raw := Record{Stream: Stdout, Text: line}
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(ts) < len("2006-01-02T15:04:05Z") || ts[4] != '-' || ts[10] != 'T' {
		return raw
	}
	if _, err := time.Parse(time.RFC3339Nano, string(ts)); err != nil {
		return raw
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok || (string(stream) != Stdout && string(stream) != Stderr) {
		return raw
	}
	if len(rest) < 1 || (rest[0] != 'F' && rest[0] != 'P') || (len(rest) > 1 && rest[1] != ' ') {
		return raw
	}
	text := rest[1:]
	if len(text) > 0 {
		text = text[1:]
	}
	return Record{Time: string(ts), Stream: string(stream), Partial: rest[0] == 'P', Text: text}
}

// Options select what a Reader returns.
type Options struct {
	// Stream is Stdout or Stderr for that stream alone; empty for both.
	Stream string
	// Timestamps prefixes each line with the time of its first record and a space.
	Timestamps bool
}

// Keeps reports whether records of stream are selected.
func (o Options) Keeps(stream string) bool { return o.Stream == "" || o.Stream == stream }

// maxJoined bounds a line joined from partial records: a stream that never writes a
// newline is cut into lines of this size rather than held in memory.
const maxJoined = 1 << 20

// readBuf is the line buffer: a record and its header fit in it.
const readBuf = MaxRecord + 256

// Reader turns records into the plain text of the selected stream(s), partial records
// joined back into their lines. At the source's end, a line still partial is returned as
// it is, without a newline. One stream without times needs no joining: its partial
// records pass as they come, so a followed prompt without a newline shows at once.
type Reader struct {
	src  *bufio.Reader
	opts Options
	// pending holds, per stream, a line begun by partial records, and its first time.
	pending     map[string][]byte
	pendingTime map[string]string
	// rawLong is set while a raw line longer than the buffer is being read.
	rawLong bool
	out     []byte
	err     error
}

// NewReader returns a Reader of the records src holds.
func NewReader(src io.Reader, opts Options) *Reader {
	return &Reader{
		src: bufio.NewReaderSize(src, readBuf), opts: opts,
		pending: map[string][]byte{}, pendingTime: map[string]string{},
	}
}

func (r *Reader) Read(p []byte) (int, error) {
	for len(r.out) == 0 && r.err == nil {
		r.next()
	}
	if len(r.out) > 0 {
		n := copy(p, r.out)
		r.out = r.out[n:]
		return n, nil
	}
	return 0, r.err
}

// next reads one line of the source and appends what it yields to out.
func (r *Reader) next() {
	line, err := r.src.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		// Only a raw line is this long: its pieces are stdout text.
		r.rawLong = true
		r.add(Record{Stream: Stdout, Partial: true, Text: line})
		return
	case err != nil && len(line) > 0:
		// The source ended inside a line: what there is of it is text, then the end.
		r.add(r.parse(line, true))
		r.finish(err)
		return
	case err != nil:
		r.finish(err)
		return
	}
	rec := r.parse(line[:len(line)-1], false)
	r.add(rec)
}

func (r *Reader) parse(line []byte, partial bool) Record {
	if r.rawLong {
		r.rawLong = partial
		return Record{Stream: Stdout, Partial: partial, Text: line}
	}
	rec := Parse(line)
	rec.Partial = rec.Partial || partial
	return rec
}

// add appends a record to its stream's pending line, and the line to out once whole.
func (r *Reader) add(rec Record) {
	if !r.opts.Keeps(rec.Stream) {
		return
	}
	if r.opts.Stream != "" && !r.opts.Timestamps {
		r.out = append(r.out, rec.Text...)
		if !rec.Partial {
			r.out = append(r.out, '\n')
		}
		return
	}
	if _, ok := r.pendingTime[rec.Stream]; !ok {
		r.pendingTime[rec.Stream] = rec.Time
	}
	r.pending[rec.Stream] = append(r.pending[rec.Stream], rec.Text...)
	if rec.Partial && len(r.pending[rec.Stream]) < maxJoined {
		return
	}
	r.emit(rec.Stream, true)
}

// emit moves a stream's pending line to out.
func (r *Reader) emit(stream string, newline bool) {
	if r.opts.Timestamps && r.pendingTime[stream] != "" {
		r.out = append(r.out, r.pendingTime[stream]...)
		r.out = append(r.out, ' ')
	}
	r.out = append(r.out, r.pending[stream]...)
	if newline {
		r.out = append(r.out, '\n')
	}
	r.pending[stream] = r.pending[stream][:0]
	delete(r.pendingTime, stream)
}

// finish ends the reading with err, returning first what partial lines are left.
func (r *Reader) finish(err error) {
	for _, s := range []string{Stdout, Stderr} {
		if len(r.pending[s]) > 0 {
			r.emit(s, false)
		}
	}
	r.err = err
}

// Text returns the plain text of a log's records (both streams, no times): for messages
// that quote a task's output.
func Text(b []byte) []byte {
	out, _ := io.ReadAll(NewReader(bytes.NewReader(b), Options{}))
	return out
}
