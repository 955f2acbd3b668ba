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
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/metrics"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return nil, fmt.Errorf("the server's metrics: %w", err)
	}
	return b, nil
}
