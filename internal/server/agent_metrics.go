package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// agentMetricsTimeout bounds one scrape of an agent through the server.
const agentMetricsTimeout = 30 * time.Second

// handleNodeMetrics serves GET /v1/nodes/{name}/metrics: the node's agent's Prometheus
// metrics, fetched over the agent's mutual TLS (docs/agent.md, "Metrics"). Prometheus
// scrapes each node through a server with a token that may read nodes; the agents
// themselves answer the servers only.
// nodeAgent reads node name and the address its agent serves at: 404 for an unknown
// node, 502 for an agent that has not said where it serves.
func (s *Server) nodeAgent(ctx context.Context, name string) (*v4.Node, string, error) {
	n, err := s.nodes().Get(ctx, "", name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", httpapi.Errorf(http.StatusNotFound, "node %s not found", name)
	}
	if err != nil {
		return nil, "", err
	}
	addr := n.Status.AgentAddress
	if addr == "" {
		return nil, "", httpapi.Errorf(http.StatusBadGateway, "the agent of node %s has not said where it serves (no status.agentAddress)", name)
	}
	return n, addr, nil
}

func (s *Server) handleNodeMetrics(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), agentMetricsTimeout)
	defer cancel()
	_, addr, err := s.nodeAgent(ctx, name)
	if err != nil {
		return err
	}
	return s.forwardToAgent(ctx, w, r, name, http.MethodGet, url.URL{Scheme: "https", Host: addr, Path: "/metrics"}, "node "+name)
}
