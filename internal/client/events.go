package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Event is one recorded happening (docs/api.md, "Events").
type Event struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Kind      v4.Kind   `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Message   string    `json:"message"`
}

// EventFilter narrows events; empty fields match everything.
type EventFilter struct {
	Namespace string
	Kind      v4.Kind
	Name      string
}

func (f EventFilter) query() url.Values {
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
func (c *Client) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	var body struct {
		Items []Event `json:"items"`
	}
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/events", query: f.query()}, &body); err != nil {
		return nil, err
	}
	return body.Items, nil
}

// EventWatch is one item of WatchEvents: an event, or (last) the error that broke the stream.
type EventWatch struct {
	Event Event
	Err   error
}

// WatchEvents streams new events matching f. The channel closes when ctx is done or the
// stream breaks (then the last item carries Err); ctx owns the goroutine feeding it.
func (c *Client) WatchEvents(ctx context.Context, f EventFilter) (<-chan EventWatch, error) {
	q := f.query()
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
			var ev Event
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
