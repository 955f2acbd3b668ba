package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

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

// Events returns the recorded events matching f, as the server orders them.
func (c *Client) Events(ctx context.Context, f v4.EventFilter) ([]v4.Event, error) {
	var body struct {
		Items []v4.Event `json:"items"`
	}
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/events", query: eventQuery(f)}, &body); err != nil {
		return nil, err
	}
	return body.Items, nil
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
	ch := make(chan EventWatch)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		err := readLines(ctx, resp.Body, func(line []byte) error {
			var ev v4.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return send(ctx, ch, EventWatch{Event: ev})
		})
		if err != nil && ctx.Err() == nil {
			_ = send(ctx, ch, EventWatch{Err: fmt.Errorf("watch events: %w", err)})
		}
	}()
	return ch, nil
}
