package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Target is where a task's check probes: Host and Port resolve the check's port (Port
// wins when > 0, else the port named PortName), Exec runs COMMAND checks in the task.
type Target struct {
	Host string
	// Ports maps a port name to the port to probe on Host for that name.
	Ports map[string]int
	Exec  func(ctx context.Context, cmd string) (driver.ExecResult, error)
}

// NewProbe builds the probe of a local check against t.
func NewProbe(c v4.HealthCheck, t Target) (Probe, error) {
	switch c.Type {
	case v4.CheckHTTP:
		if c.HTTP == nil {
			return nil, errors.New("HTTP check without http settings")
		}
		port, err := t.port(c.HTTP.Port, c.HTTP.PortName)
		if err != nil {
			return nil, err
		}
		return HTTP(URL(c.HTTP, t.Host, port), c.HTTP.Headers), nil
	case v4.CheckTCP:
		if c.TCP == nil {
			return nil, errors.New("TCP check without tcp settings")
		}
		port, err := t.port(c.TCP.Port, c.TCP.PortName)
		if err != nil {
			return nil, err
		}
		return TCP(net.JoinHostPort(t.Host, strconv.Itoa(port))), nil
	case v4.CheckCommand:
		if c.Command == nil || c.Command.Value == "" {
			return nil, errors.New("COMMAND check without a command")
		}
		if t.Exec == nil {
			return nil, errors.New("COMMAND check: the task's driver cannot exec")
		}
		return Command(t.Exec, c.Command.Value), nil
	}
	return nil, fmt.Errorf("health check type %q does not run on the agent", c.Type)
}

// URL is what an HTTP check gets on host and port: its scheme (http by default) and path.
func URL(c *v4.HTTPCheck, host string, port int) string {
	scheme := strings.ToLower(c.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
}

func (t Target) port(port int, name string) (int, error) {
	if port > 0 {
		return port, nil
	}
	if p, ok := t.Ports[name]; ok && p > 0 {
		return p, nil
	}
	return 0, fmt.Errorf("health check port %q is not a port of the task", name)
}

// HTTP probes with GET url: 200-399 is healthy. Certificates are not verified (BCS) and
// redirects are not followed, since a 3xx already counts as healthy.
func HTTP(url string, headers map[string]string) Probe {
	client := &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // BCS: https checks do not verify
			DisableKeepAlives: true,                                  // one connection per probe, nothing left open
			Proxy:             nil,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("HTTP GET %s: %w", url, err)
		}
		for k, v := range headers {
			if strings.EqualFold(k, "Host") {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("HTTP GET %s: %w", url, unwrapURLError(err))
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 399 {
			return fmt.Errorf("HTTP GET %s returned %d", url, resp.StatusCode)
		}
		return nil
	}
}

// unwrapURLError drops net/http's "Get \"url\":" prefix, which the message already has.
func unwrapURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// TCP probes by connecting to addr.
func TCP(addr string) Probe {
	return func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("TCP connect %s: %w", addr, err)
		}
		_ = conn.Close()
		return nil
	}
}

// Command probes by running cmd in the task: exit status 0 is healthy.
func Command(exec func(ctx context.Context, cmd string) (driver.ExecResult, error), cmd string) Probe {
	return func(ctx context.Context) error {
		res, err := exec(ctx, cmd)
		if err != nil {
			return fmt.Errorf("command %q: %w", cmd, err)
		}
		if res.ExitCode != 0 {
			msg := fmt.Sprintf("command %q exited with code %d", cmd, res.ExitCode)
			if out := strings.TrimSpace(string(res.Output)); out != "" {
				msg += ": " + truncate(out, 200)
			}
			return errors.New(msg)
		}
		return nil
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
