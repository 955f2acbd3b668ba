package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// LogOptions select the output Logs returns.
type LogOptions struct {
	// Task names the task; "" is the first task.
	Task string
	// Follow streams new output until ctx ends.
	Follow bool
	// Tail > 0 keeps only the last lines (of the stream selected).
	Tail int
	// Stream is v4.LogStreamStdout or v4.LogStreamStderr for that stream alone; "" for
	// both, in the order they were written.
	Stream string
	// Timestamps prefixes each line with the time it was written.
	Timestamps bool
}

// Logs streams the output of a task of task group ns/name, read by the server from the
// agent of the task group's node. The caller closes the reader.
func (c *Client) Logs(ctx context.Context, ns, name string, opts LogOptions) (io.ReadCloser, error) {
	path, err := objectPath(v4.KindTaskGroup, ns, name, "logs")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts.Task != "" {
		q.Set("task", opts.Task)
	}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Tail > 0 {
		q.Set("tail", strconv.Itoa(opts.Tail))
	}
	if opts.Stream != "" {
		q.Set("stream", opts.Stream)
	}
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Action runs a process's reloadCmd or restartCmd (v4.ActionReload, v4.ActionRestart) on
// one task of task group ns/name, or on every task when task is "".
func (c *Client) Action(ctx context.Context, ns, name, task, action string) error {
	return c.action(ctx, ns, name, task, action, url.Values{})
}

// Signal sends a signal (a number or a name: "HUP", "SIGUSR1") to the main process of
// one task of a task group, or of each of its tasks when task is "".
func (c *Client) Signal(ctx context.Context, ns, name, task, signal string) error {
	return c.action(ctx, ns, name, task, v4.ActionSignal, url.Values{"signal": {signal}})
}

func (c *Client) action(ctx context.Context, ns, name, task, action string, q url.Values) error {
	path, err := objectPath(v4.KindTaskGroup, ns, name, "actions/"+url.PathEscape(action))
	if err != nil {
		return err
	}
	if task != "" {
		q.Set("task", task)
	}
	return c.doNoAnswer(ctx, request{method: http.MethodPost, path: path, query: q})
}
