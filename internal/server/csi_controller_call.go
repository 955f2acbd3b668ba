package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// CSI controller calls (docs/volumes.md, "Plugins"): a controller plugin's socket is on
// the node that runs it, so the server asks that node's agent to make the call (POST
// /v1/csi/controller), over the same verified connection as logs and actions
// (agent_proxy.go).

// csiControllerTimeout bounds one call: the agent's client gives a plugin two minutes
// (csi.DefaultTimeout) to create or delete a volume; the rest is the round trip.
const csiControllerTimeout = 2*time.Minute + 15*time.Second

// maxCSIControllerReply bounds the agent's answer read into memory (a volume's ID,
// context and topology: small).
const maxCSIControllerReply = 4 << 20

// csiController asks node's agent to make the controller call req with its plugin. An
// error is an *httpapi.Error whose Code is the agent's status: the plugin's gRPC code
// mapped (404 NotFound, 400 InvalidArgument, 409 AlreadyExists or a plugin without the
// controller service, 422 ResourceExhausted or OutOfRange, 504 DeadlineExceeded, 502
// otherwise), with the plugin's message; 502 when the agent cannot be reached.
func (s *Server) csiController(ctx context.Context, node string, req v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	var out v4.CSIControllerReply
	ctx, cancel := context.WithTimeout(ctx, csiControllerTimeout)
	defer cancel()
	_, addr, err := s.nodeAgent(ctx, node)
	if err != nil {
		return out, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("encode the CSI controller request: %w", err)
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/v1/csi/controller"}
	hreq, err := http.NewRequestWithContext(toAgent(ctx, node), http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return out, httpapi.Errorf(http.StatusBadGateway, "bad agent address %q for node %s: %v", addr, node, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := s.agentHTTP.Do(hreq)
	if err != nil {
		return out, httpapi.Errorf(http.StatusBadGateway, "cannot reach the agent of node %s at %s: %v", node, addr, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxCSIControllerReply))
	if err != nil {
		return out, httpapi.Errorf(http.StatusBadGateway, "read the answer of node %s's agent: %v", node, err)
	}
	if resp.StatusCode != http.StatusOK {
		return out, agentError(node, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, httpapi.Errorf(http.StatusBadGateway, "the agent of node %s answered a CSI %s that does not decode: %v", node, req.Op, err)
	}
	return out, nil
}

// agentError is the agent's error answer with its status and message (an agent
// without the route, older than CSI support, answers 404 "no route").
func agentError(node string, code int, body []byte) *httpapi.Error {
	var eb v4.ErrorBody
	if err := json.Unmarshal(body, &eb); err == nil && eb.Error != nil && eb.Error.Message != "" {
		return httpapi.Errorf(code, "node %s: %s", node, eb.Error.Message)
	}
	return httpapi.Errorf(code, "node %s's agent answered %d: %.200s", node, code, body)
}

// csiStatus is the HTTP status of a csiController error (0 when it carries none).
func csiStatus(err error) int {
	var he *httpapi.Error
	if errors.As(err, &he) {
		return he.Code
	}
	return 0
}
