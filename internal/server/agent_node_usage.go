package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/scheduler"
)

// maxNodeUsageBody bounds the agent's answer read into memory (a few hundred bytes).
const maxNodeUsageBody = 1 << 20

// handleNodeUsage serves GET /v1/nodes/{name}/usage: what the node uses now as its agent
// measures it (v4.NodeUsage), with what berth may hand out there and what its task
// groups reserve (the scheduler's accounting, as the node list's usage) beside it.
func (s *Server) handleNodeUsage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	n, addr, err := s.nodeAgent(ctx, name)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/v1/node/usage"}
	req, err := http.NewRequestWithContext(toAgent(ctx, name), http.MethodGet, u.String(), nil)
	if err != nil {
		return httpapi.Errorf(http.StatusBadGateway, "bad agent address %q for node %s: %v", addr, name, err)
	}
	resp, err := s.agentHTTP.Do(req)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the client went away
		}
		return httpapi.Errorf(http.StatusBadGateway, "cannot reach the agent of node %s at %s: %v", name, addr, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxNodeUsageBody))
	if err != nil {
		return httpapi.Errorf(http.StatusBadGateway, "read the usage of node %s from its agent: %v", name, err)
	}
	if resp.StatusCode != http.StatusOK { // the agent's own error (an older agent: 404), as it said it
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
		return nil
	}
	var nu v4.NodeUsage
	if err := json.Unmarshal(body, &nu); err != nil {
		return httpapi.Errorf(http.StatusBadGateway, "the agent of node %s answered usage that does not decode: %v", name, err)
	}
	nu.Node, nu.Allocatable = name, n.Spec.Allocatable
	if s.feed != nil {
		s.feed.With(func(snap *scheduler.Snapshot) {
			if ru, ok := snap.Usage([]string{name}, time.Now())[name]; ok {
				nu.Reserved = v4.NodeReservedUsage{CPU: ru.CPU, MemoryMB: ru.MemoryMB, TaskGroups: ru.TaskGroups,
					OverheadCPU: ru.OverheadCPU, OverheadMemoryMB: ru.OverheadMemoryMB}
			}
		})
	}
	httpapi.WriteJSON(w, http.StatusOK, nu)
	return nil
}
