package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// ServerMetrics returns the Prometheus metrics of the server the client talks to, in the
// text format (GET /metrics; the token needs the right to read them).
func (c *Client) ServerMetrics(ctx context.Context) ([]byte, error) {
	return c.metrics(ctx, "/metrics", "the server's metrics")
}

// metrics reads the Prometheus text at path, at most maxMetricsBytes of it; what names
// it in an error.
func (c *Client) metrics(ctx context.Context, path, what string) ([]byte, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// maxMetricsBytes bounds the metrics of a server or an agent as read by the client.
const maxMetricsBytes = 16 << 20
