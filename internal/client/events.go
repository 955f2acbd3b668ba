package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// eventQuery turns a filter into the query of GET /v1/events.
func eventQuery(f v4.EventFilter) url.Values {
	q := url.Values{}
	if f.Namespace != "" {
		q.Set("namespace", f.Namespace)
	}
	if f.Kind != "" {
		q.Set("kind", string(f.Kind))
	}
	if f.Name != "" {
		q.Set("name", f.Name)
	}
	return q
}

// EventPage is one page of GET /v1/events. Continue, when set, asks for the next page;
// every page of one list reads the same ResourceVersion.
type EventPage = v4.EventList

// eventPageSize is the page size Events asks for: few round trips, bounded answers.
const eventPageSize = 1000

// EventsPage returns one page of the events matching f, oldest (least recently seen)
// first: up to limit of them (0: the server's default), after the page cont continues
// ("" for the first page). A continue token older than etcd's history is a 410: start over.
func (c *Client) EventsPage(ctx context.Context, f v4.EventFilter, limit int, cont string) (EventPage, error) {
	q := eventQuery(f)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cont != "" {
		q.Set("continue", cont)
	}
	var page EventPage
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/events", query: q}, &page); err != nil {
		return EventPage{}, err
	}
	return page, nil
}

// Events returns every recorded event matching f, as the server orders them (least
// recently seen first), following the pages. The server bounds the records it keeps
// (docs/operations.md, "Events"), so the answer is bounded too.
func (c *Client) Events(ctx context.Context, f v4.EventFilter) ([]v4.Event, error) {
	var out []v4.Event
	err := c.EachEventPage(ctx, f, func(p EventPage) error {
		out = append(out, p.Items...)
		return nil
	})
	return out, err
}

// EachEventPage calls fn with every page of the events matching f, in order, until the
// last page or fn's first error.
func (c *Client) EachEventPage(ctx context.Context, f v4.EventFilter, fn func(EventPage) error) error {
	cont := ""
	for {
		page, err := c.EventsPage(ctx, f, eventPageSize, cont)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if page.Continue == "" {
			return nil
		}
		cont = page.Continue
	}
}

// EventWatch is one item of WatchEvents: an event, or (last) the error that broke the stream.
type EventWatch struct {
	Event v4.Event
	Err   error
}

// WatchEvents streams new events matching f. The channel closes when ctx is done or the
// stream breaks (then the last item carries Err); ctx owns the goroutine feeding it.
func (c *Client) WatchEvents(ctx context.Context, f v4.EventFilter) (<-chan EventWatch, error) {
	q := eventQuery(f)
	q.Set("watch", "true")
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/events", query: q})
	if err != nil {
		return nil, err
	}
	return streamLines(ctx, resp, decodeEventLine, func(err error) EventWatch {
		return EventWatch{Err: fmt.Errorf("watch events: %w", err)}
	}), nil
}

// decodeEventLine decodes one line of an event stream; the ERROR line that ends a stream
// comes back as the error.
func decodeEventLine(line []byte) (EventWatch, error) {
	if err := streamError(line); err != nil {
		return EventWatch{}, err
	}
	var ev v4.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return EventWatch{}, fmt.Errorf("decode event: %w", err)
	}
	return EventWatch{Event: ev}, nil
}
