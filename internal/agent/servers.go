package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
)

// servers are the API servers the agent may talk to. Calls go to the current one; when
// it cannot be reached (or answers that it cannot serve: 502, 503, 504) the next one is
// tried, and the first that answers becomes current.
type servers struct {
	log     *slog.Logger
	clients []*client.Client

	mu  sync.Mutex
	cur int
}

// An agent talks to a server over one HTTP/2 connection (client.MultiplexedHTTPClient):
// its task group watch, its heartbeat stream and its calls (status writes and full
// reports take turns, Agent.reports) are streams of it, and an agent that runs the
// cluster DNS server has one more, its watch of services (Config.followsCatalog). A
// server therefore holds one connection per node (5,000 at 5,000 nodes), far below the
// streams it allows on one (h2Streams in internal/server/config.go).
//
// agentMaxConns is how many connections an agent opens to one server at most with a
// server that offers only HTTP/1.1, where each of those takes a connection:
// agentMaxConnsDNS with the watch of services. Over HTTP/2 the transport opens a second
// connection only when the first has no stream left, which the agent's few never reach.
const (
	agentMaxConns    = 3
	agentMaxConnsDNS = 4
)

// agentIdleConn is how long the agent keeps an idle connection to a server: longer than
// the time between two full reports at the default report interval.
const agentIdleConn = 6 * time.Minute

// newServers makes a client of each server over hc; token, when set, is sent as a bearer
// token (joining).
func newServers(urls []string, hc *http.Client, token string, maxConns int, log *slog.Logger) (*servers, error) {
	s := &servers{log: log}
	// No overall timeout (watches last); the wait for an answer's headers is bounded so a
	// dead server is noticed.
	if t, ok := hc.Transport.(*http.Transport); ok {
		t.ResponseHeaderTimeout = 30 * time.Second
		// Over HTTP/1.1 the task group watch and the heartbeat stream hold one connection
		// each and the calls share the rest: a slow server makes calls wait instead of
		// each opening one more connection (at thousands of agents, the server's file
		// descriptors run out). Over HTTP/2 they are streams of one connection.
		t.MaxConnsPerHost = maxConns
		// A connection that carries only calls stays open between full reports (every
		// tenth periodic report), so a burst of status writes does not handshake again;
		// the server keeps idle connections a little longer than this.
		t.IdleConnTimeout = agentIdleConn
	}
	for _, u := range urls {
		opts := []client.Option{client.WithHTTPClient(hc), client.WithUserAgent("berth-agent/" + Version)}
		if token != "" {
			opts = append(opts, client.WithBearerToken(token))
		}
		c, err := client.New(u, opts...)
		if err != nil {
			return nil, fmt.Errorf("agent config: server %q: %w", u, err)
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

// do calls fn with the current server's client, failing over to the others in order.
func (s *servers) do(ctx context.Context, fn func(*client.Client) error) error {
	s.mu.Lock()
	start := s.cur
	s.mu.Unlock()
	var err error
	for i := range s.clients {
		idx := (start + i) % len(s.clients)
		err = fn(s.clients[idx])
		if ctx.Err() != nil {
			return err
		}
		if !failover(err) {
			if i > 0 {
				s.mu.Lock()
				s.cur = idx
				s.mu.Unlock()
				s.log.Info("switched to server", "server", s.clients[idx].Server())
			}
			return err
		}
	}
	return err
}

// moveOn makes the server after c current, if c is current: c failed in a way that
// another server may not (a stream it ended because it cannot serve).
func (s *servers) moveOn(c *client.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) > 1 && s.clients[s.cur] == c {
		s.cur = (s.cur + 1) % len(s.clients)
		s.log.Info("switched to server", "server", s.clients[s.cur].Server())
	}
}

// failover reports whether err means "this server cannot help now": no answer at all,
// or a gateway or unavailable answer.
func failover(err error) bool {
	if err == nil {
		return false
	}
	switch client.StatusOf(err) {
	case 0, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// sleep waits d or until ctx ends; it reports whether the wait was complete.
func sleep(ctx context.Context, d time.Duration) bool {
	return ctxtime.Sleep(ctx, d) == nil
}
