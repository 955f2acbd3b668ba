package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// agentMetricsTimeout bounds one scrape of an agent through the server.
const agentMetricsTimeout = 30 * time.Second

// handleNodeMetrics serves GET /v1/nodes/{name}/metrics: the node's agent's Prometheus
// metrics, fetched over the agent's mutual TLS (docs/agent.md, "Metrics"). Prometheus
// scrapes each node through a server with a token that may read nodes; the agents
// themselves answer the servers only.
func (s *Server) handleNodeMetrics(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), agentMetricsTimeout)
	defer cancel()
	n, err := s.nodes().Get(ctx, "", name)
	if errors.Is(err, store.ErrNotFound) {
		return httpapi.Errorf(http.StatusNotFound, "node %s not found", name)
	}
	if err != nil {
		return err
	}
	addr := n.Status.AgentAddress
	if addr == "" {
		return httpapi.Errorf(http.StatusBadGateway, "the agent of node %s has not said where it serves (no status.agentAddress)", name)
	}
	return s.forwardToAgent(ctx, w, r, name, http.MethodGet, url.URL{Scheme: "https", Host: addr, Path: "/metrics"}, "node "+name)
}
