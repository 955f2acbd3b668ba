package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/execstream"
)

// ExecOptions describe one command run in a task (berth exec).
type ExecOptions struct {
	Task   string   // "" is the task group's first task
	Cmd    []string // the command and its arguments
	TTY    bool     // attach a terminal
	Stdin  io.Reader
	Stdout io.Writer
	// Resize carries the local terminal's size (with TTY), first the initial one.
	Resize <-chan v4.TermSize
}

// Exec runs a command in a task of task group ns/name, through the server and the agent
// of its node, over one upgraded connection (internal/execstream). It returns the
// command's exit code; an error means the command did not run or the stream broke.
func (c *Client) Exec(ctx context.Context, ns, name string, o ExecOptions) (int, error) {
	path, err := objectPath(v4.KindTaskGroup, ns, name, "exec")
	if err != nil {
		return 0, err
	}
	q := url.Values{"cmd": o.Cmd}
	if o.Task != "" {
		q.Set("task", o.Task)
	}
	if o.TTY {
		q.Set("tty", "true")
	}
	resp, err := c.roundTrip(ctx, http.MethodPost, path, func(base *url.URL) (*http.Request, error) {
		u := *base
		u.Path = base.Path + path
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", execstream.Protocol)
		return req, nil
	})
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return 0, fmt.Errorf("POST %s: the server answered %s instead of switching to %s", path, resp.Status, execstream.Protocol)
		}
		return 0, decodeError(resp)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return 0, fmt.Errorf("POST %s: the upgraded connection is not writable", path)
	}
	return execstream.Attach(ctx, conn, o.Stdin, o.Stdout, o.Resize)
}
