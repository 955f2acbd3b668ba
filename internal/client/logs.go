package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// Logs streams the output of a task of task group ns/name (task "" is the first task),
// read by the server from the agent of the task group's node. With follow the stream
// lasts until ctx ends; tail > 0 keeps only the last lines. The caller closes the reader.
func (c *Client) Logs(ctx context.Context, ns, name, task string, follow bool, tail int) (io.ReadCloser, error) {
	path, err := objectPath(v4.KindTaskGroup, ns, name, "logs")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	if follow {
		q.Set("follow", "true")
	}
	if tail > 0 {
		q.Set("tail", strconv.Itoa(tail))
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
