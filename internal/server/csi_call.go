package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/volumes"
)

// The volume controller and the claims make CSI controller calls through the agent of a
// node whose plugin offers the controller service (docs/volumes.md): POST
// /v1/csi/controller there, over the server's agent client, which accepts only that
// node's agent certificate.
const (
	// csiCallTimeout bounds one call: the plugin's own timeout (two minutes, internal/csi)
	// and the way there and back.
	csiCallTimeout = 150 * time.Second
	// maxCSIReplyBytes bounds the agent's answer read into memory (the plugin's answers
	// are bounded at 4 MiB by internal/csi).
	maxCSIReplyBytes = 5 << 20
)

// csiCalls implements volumes.VolumeController over the server's agent client.
type csiCalls struct{ s *Server }

// VolumeController returns the server's CSI controller calls, for the volume controller
// (controller.Options.Volumes).
func (s *Server) VolumeController() volumes.VolumeController { return csiCalls{s} }

// Call makes req on node's agent. An answer of 4xx but 408 and 429 is the plugin's (or
// the agent's) refusal of the request itself and wraps volumes.ErrRefused; the rest
// (no agent, 5xx, a timeout) may pass and is retried by the caller.
func (c csiCalls) Call(ctx context.Context, node string, req v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	var reply v4.CSIControllerReply
	ctx, cancel := context.WithTimeout(ctx, csiCallTimeout)
	defer cancel()
	_, addr, err := c.s.nodeAgent(ctx, node)
	if err != nil {
		return reply, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return reply, err
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/v1/csi/controller"}
	hreq, err := http.NewRequestWithContext(toAgent(ctx, node), http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return reply, fmt.Errorf("bad agent address %q of node %s: %w", addr, node, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.s.agentHTTP.Do(hreq)
	if err != nil {
		return reply, fmt.Errorf("csi %s %s on node %s: %w", req.Op, req.Plugin, node, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxCSIReplyBytes+1))
	if err != nil {
		return reply, fmt.Errorf("csi %s %s on node %s: read the answer: %w", req.Op, req.Plugin, node, err)
	}
	if len(data) > maxCSIReplyBytes {
		return reply, fmt.Errorf("csi %s %s on node %s: the answer is over %d bytes", req.Op, req.Plugin, node, maxCSIReplyBytes)
	}
	if resp.StatusCode/100 != 2 {
		return reply, agentCallError(req, node, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return reply, fmt.Errorf("csi %s %s on node %s: the answer does not decode: %w", req.Op, req.Plugin, node, err)
	}
	return reply, nil
}

// agentCallError is the error of an agent's non-2xx answer, with the message of its
// error envelope (else the start of its body).
func agentCallError(req v4.CSIControllerRequest, node string, code int, data []byte) error {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := string(data[:min(len(data), 512)])
	if json.Unmarshal(data, &env) == nil && env.Error.Message != "" {
		msg = env.Error.Message
	}
	err := fmt.Errorf("csi %s %s on node %s: %d: %s", req.Op, req.Plugin, node, code, msg)
	if code/100 == 4 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
		return fmt.Errorf("%w: %w", volumes.ErrRefused, err)
	}
	return err
}
