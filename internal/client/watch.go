package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// Watch event types.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
	// EventError is delivered once, last, when the stream breaks for a reason other than
	// the caller's context ending; Err says why.
	EventError = v4.WatchErrorType
)

// WatchEvent is one change of one object.
type WatchEvent struct {
	Type   string
	Object v4.Object
	Err    error
}

// maxLine bounds one NDJSON line (one object); the server limits bodies to 2 MiB.
const maxLine = 8 << 20

// Watch streams changes of a kind in namespace ns ("" = every namespace). Without rv the
// stream starts with an ADDED event per existing object; with rv it replays every change
// after that revision (410 Gone, as an *APIError, when it was compacted).
//
// The channel is closed when the stream ends: when ctx is done (no error event) or when
// the server or network ends it (one EventError first). The goroutine feeding it is owned
// by ctx: cancel ctx to stop it, and it exits even if nobody reads any more.
func (c *Client) Watch(ctx context.Context, kind v4.Kind, ns, rv string) (<-chan WatchEvent, error) {
	path, err := objectPath(kind, ns, "", "")
	if err != nil {
		return nil, err
	}
	return c.watchPath(ctx, path, kind, rv, "watch "+kind.Plural())
}

// watchPath streams the changes of the objects of kind at path after revision rv, as
// Watch; what names the watch in its error.
func (c *Client) watchPath(ctx context.Context, path string, kind v4.Kind, rv, what string) (<-chan WatchEvent, error) {
	q := url.Values{"watch": {"true"}}
	if rv != "" {
		q.Set("resourceVersion", rv)
	}
	return c.streamEvents(ctx, request{method: http.MethodGet, path: path, query: q}, kind, what)
}

// streamEvents sends req and streams the watch events of its answer, as Watch; objects
// without a kind of their own are decoded as kind.
func (c *Client) streamEvents(ctx context.Context, req request, kind v4.Kind, what string) (<-chan WatchEvent, error) {
	resp, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	decode := func(line []byte) (WatchEvent, error) { return decodeWatchEvent(line, kind) }
	return streamLines(ctx, resp, decode, func(err error) WatchEvent {
		return WatchEvent{Type: EventError, Err: fmt.Errorf("%s: %w", what, err)}
	}), nil
}

// streamLines feeds the channel it returns with the items decode makes of the lines of
// resp's body, and closes it when ctx is done or the stream breaks; a break (not ctx's
// end) is told by a last item, broken(err). ctx owns the goroutine feeding the channel.
func streamLines[T any](ctx context.Context, resp *http.Response, decode func([]byte) (T, error), broken func(error) T) <-chan T {
	ch := make(chan T)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		err := readLines(ctx, resp.Body, func(line []byte) error {
			item, err := decode(line)
			if err != nil {
				return err
			}
			return send(ctx, ch, item)
		})
		if err != nil && ctx.Err() == nil {
			_ = send(ctx, ch, broken(err))
		}
	}()
	return ch
}

// decodeWatchEvent decodes one NDJSON line {"type": ..., "object": {...}}; the ERROR line
// that ends a stream comes back as the error.
func decodeWatchEvent(line []byte, kind v4.Kind) (WatchEvent, error) {
	if err := streamError(line); err != nil {
		return WatchEvent{}, err
	}
	var raw v4.WatchLine[json.RawMessage]
	if err := json.Unmarshal(line, &raw); err != nil {
		return WatchEvent{}, fmt.Errorf("decode event: %w", err)
	}
	obj, err := decodeObject(raw.Object, kind)
	if err != nil {
		return WatchEvent{}, err
	}
	return WatchEvent{Type: raw.Type, Object: obj}, nil
}

// readLines calls fn for every non-empty line of r until r ends, fn fails or ctx is done.
// A clean end of stream is reported as io.ErrUnexpectedEOF: watches never end by themselves.
func readLines(ctx context.Context, r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("the server closed the stream")
}

// send delivers v unless ctx ends first, so the feeding goroutine never blocks forever.
func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
