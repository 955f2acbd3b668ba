package sim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// lostWatch records the nodes the server marks Lost while a burst runs: under load no
// node may be, since every simulated node keeps beating.
type lostWatch struct {
	mu   sync.Mutex
	lost map[string]bool
	err  error // the watch could not be followed to the end
}

// watchLost lists the nodes and follows them from that list's revision until ctx ends.
// A node already Lost before does not count unless it is marked Lost again.
// It returns the watch's events and revision, for follow.
func watchLost(ctx context.Context, c *client.Client) (*lostWatch, <-chan client.WatchEvent, string, error) {
	list, err := c.List(ctx, v4.KindNode, "")
	if err != nil {
		return nil, nil, "", fmt.Errorf("list nodes: %w", err)
	}
	events, err := c.WatchNodes(ctx, list.ResourceVersion)
	if err != nil {
		return nil, nil, "", fmt.Errorf("watch nodes: %w", err)
	}
	return &lostWatch{lost: map[string]bool{}}, events, list.ResourceVersion, nil
}

// follow reads events until ctx ends, watching again from the last revision when the
// server ends the watch (it cuts a watcher that falls behind).
func (w *lostWatch) follow(ctx context.Context, c *client.Client, events <-chan client.WatchEvent, rv string) {
	for failures := 0; ; {
		for ev := range events {
			if ev.Err != nil {
				if client.StatusOf(ev.Err) == http.StatusGone {
					rv = client.ResumeVersion(ev.Err)
				}
				continue
			}
			n, ok := ev.Object.(*v4.Node)
			if !ok {
				continue
			}
			rv = n.Metadata.ResourceVersion
			if ev.Type != "DELETED" && n.Status.Phase == v4.NodeLost {
				w.mu.Lock()
				w.lost[n.Metadata.Name] = true
				w.mu.Unlock()
			}
		}
		if ctx.Err() != nil {
			return
		}
		var err error
		if rv == "" {
			err = fmt.Errorf("the node watch ended, its revision unknown")
		} else if events, err = c.WatchNodes(ctx, rv); err == nil {
			failures = 0
			continue
		}
		if failures++; failures >= 3 || rv == "" {
			w.mu.Lock()
			w.err = fmt.Errorf("nodes marked Lost: %w", err)
			w.mu.Unlock()
			return
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return
		}
	}
}

// result is the nodes marked Lost, sorted, and whether the watch was followed to the end.
func (w *lostWatch) result() ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for n := range w.lost {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, w.err
}
