package agent

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
)

// An agent holds one connection to its server: its heartbeat stream, its task group
// watch, its status writes and its full reports are streams of one HTTP/2 connection, so
// a server holds one TLS session per node.
func TestAgentHoldsOneConnection(t *testing.T) {
	c := newCluster(t)
	var mu sync.Mutex
	conns := map[string]bool{} // the agent's connections, by their remote address
	kinds := map[string]bool{} // the kinds of the agent's requests seen on them
	var notH2 []string         // requests of the agent that were not HTTP/2
	seen := func(r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return // the join (no certificate yet: a connection of its own, closed after)
		}
		mu.Lock()
		defer mu.Unlock()
		conns[r.RemoteAddr] = true
		if r.ProtoMajor != 2 {
			notH2 = append(notH2, r.Method+" "+r.URL.Path+" "+r.Proto)
		}
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/heartbeats"):
			kinds["heartbeat stream"] = true
		case strings.HasSuffix(p, "/taskgroups") && r.URL.Query().Get("watch") == "true":
			kinds["watch"] = true
		case strings.HasSuffix(p, "/status"):
			kinds["status"] = true
		case strings.HasSuffix(p, "/report"):
			kinds["report"] = true
		}
	}
	c.seen.Store(&seen)
	startAgent(t, c, t.TempDir(), fake.New("process"))
	runProcessTGs(t, "0.web.ns-a.c.1", "1.web.ns-a.c.1")
	// Statuses go as status writes, or in a full report when one is due.
	waitFor(t, "a heartbeat stream, a watch and a full report", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return kinds["heartbeat stream"] && kinds["watch"] && kinds["report"]
	})
	mu.Lock()
	if len(conns) != 1 || len(notH2) != 0 {
		t.Errorf("the agent's requests came over %d connections (want 1): %v; not over HTTP/2: %v", len(conns), conns, notH2)
	}
	mu.Unlock()
	// The join's connection is closed once the node has its certificate: the server is
	// left with the agent's one.
	waitFor(t, "the server to hold one connection", func() bool { return c.open.Load() == 1 })
	if got := getNode(t); got.Status.Phase != v4.NodeReady {
		t.Errorf("node: %s", got.Status.Phase)
	}
}
