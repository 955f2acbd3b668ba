package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agentapi"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/httpapi"
)

// beatUntilError beats on s every 300 ms until a beat fails, and returns that error.
func beatUntilError(t *testing.T, s *client.HeartbeatStream) error {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if err := s.Beat(v4.AgentHeartbeat{}); err != nil {
			return err
		}
	}
	t.Fatal("the heartbeat stream did not end in 10 s")
	return nil
}

// An agent's beats on its stream keep its node alive: the first makes it Ready with the
// agent's version and address, the next write nothing. A deleted node ends the stream
// with a 404, as the single heartbeat does.
func TestAgentHeartbeatStream(t *testing.T) {
	url := newTestServer(t, Config{})
	ctx := context.Background()
	c, err := client.New(url, client.WithHTTPClient(httpClientAs(t, "n1")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.AgentHeartbeats(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if err := beatUntilError(t, s); !client.IsNotFound(err) {
		t.Fatalf("beats of a node that does not exist: %v", err)
	}
	s.Close()

	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", strings.Replace(nodeJSON("n1", ""), `"Ready"`, `"NotReady"`, 1)), http.StatusCreated)
	if s, err = c.AgentHeartbeats(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Beat(v4.AgentHeartbeat{AgentVersion: "v9", AgentAddress: "127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	var n v4.Node
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n = decodeNodeBody(t, call(t, http.MethodGet, url+"/v1/nodes/n1", "").body)
		if n.Status.Phase == v4.NodeReady {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the node is not Ready 10 s after a beat: %+v", n.Status)
		}
	}
	if n.Status.AgentVersion != "v9" || n.Status.AgentAddress != "127.0.0.1:9" {
		t.Fatalf("after the first beat: %+v", n.Status)
	}
	start := revision(t, context.Background())
	for range 5 {
		time.Sleep(agentapi.MinBeatGap)
		if err := s.Beat(v4.AgentHeartbeat{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(agentapi.MinBeatGap)
	if end := revision(t, context.Background()); end != start {
		t.Errorf("5 beats that change nothing moved etcd's revision from %d to %d", start, end)
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/nodes/n1", ""), http.StatusOK)
	if err := beatUntilError(t, s); !client.IsNotFound(err) {
		t.Fatalf("beats after the node was deleted: %v", err)
	}
}

// The server acknowledges a stream's first beat; a line that is not a heartbeat, or is
// too long, ends the stream with an error line that names the problem.
func TestAgentHeartbeatStreamLines(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	for _, c := range []struct{ name, body, want string }{
		{"acknowledged", "{}\n{}\n", "{}\n"},
		{"empty line", "\n", "{}\n"},
		{"unknown field", `{"nope":1}` + "\n", `"code":400`},
		{"not JSON", "beat\n", "not a heartbeat"},
		{"too long", strings.Repeat("x", agentapi.MaxBeatLine+1), `"code":413`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/heartbeats", c.body)
			if r.code != http.StatusOK || !strings.Contains(string(r.body), c.want) {
				t.Fatalf("got %d %q, want 200 with %q", r.code, r.body, c.want)
			}
		})
	}
}

// FuzzHeartbeatStreamLine sends one line of any bytes as a beat: the stream answers 200
// and lines that are each an acknowledgement or an error answer, and the server lives on.
func FuzzHeartbeatStreamLine(f *testing.F) {
	for _, seed := range []string{"{}", "", `{"agentVersion":"v1","agentAddress":"127.0.0.1:9"}`, `{"agentVersion":3}`,
		`{"nope":1}`, `{"agentVersion":"a","agentVersion":"b"}`, "[]", "null", `{} {}`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		url := newTestServer(t, Config{})
		wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
		body := strings.ReplaceAll(string(line), "\n", " ") + "\n"
		r := agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/heartbeats", body)
		if r.code != http.StatusOK {
			t.Fatalf("status %d: %s", r.code, r.body)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n") {
			var answer struct {
				Error *httpapi.Error `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &answer); err != nil {
				t.Fatalf("answer line %q is not JSON: %v", l, err)
			}
			if answer.Error != nil && (answer.Error.Code < 400 || answer.Error.Message == "") {
				t.Fatalf("error line without a code or message: %q", l)
			}
		}
	})
}

// A node has one heartbeat stream: a second one ends the first with a 409 line, and an
// agent opening stream after stream holds one at a time, each stream a connection of
// its own (HTTP/1.1, agents before HTTP/2) or a stream of the agent's one connection.
func TestAgentHeartbeatStreamReplaced(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	t.Run("HTTP/1.1", func(t *testing.T) { heartbeatStreamReplaced(t, srv, url, httpClientAs(t, "n1")) })
	t.Run("HTTP/2", func(t *testing.T) { heartbeatStreamReplaced(t, srv, url, h2Client(t, "n1")) })
}

func heartbeatStreamReplaced(t *testing.T, srv *Server, url string, hc *http.Client) {
	ctx := context.Background()
	c, err := client.New(url, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.AgentHeartbeats(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := first.BeatAndWait(ctx, v4.AgentHeartbeat{}); err != nil {
		t.Fatal(err)
	}
	var streams []*client.HeartbeatStream
	for range 5 {
		s, err := c.AgentHeartbeats(ctx, "n1")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		streams = append(streams, s)
	}
	last := streams[len(streams)-1]
	if err := last.BeatAndWait(ctx, v4.AgentHeartbeat{}); err != nil {
		t.Fatalf("the newest stream: %v", err)
	}
	err = beatUntilError(t, first)
	if client.StatusOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("the first stream after others opened: %v", err)
	}
	for end := time.Now().Add(5 * time.Second); srv.agents.LiveBeatStreams() != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d live streams of one node", srv.agents.LiveBeatStreams())
		}
	}
	if err := last.Beat(v4.AgentHeartbeat{}); err != nil {
		t.Fatalf("the newest stream after the others ended: %v", err)
	}
}

// A stream on which the agent went silent is ended by the sweep of silent streams (no
// read deadline per stream), over HTTP/1.1 and HTTP/2; the agent's next beat fails and
// another stream of the node is served.
func TestAgentHeartbeatStreamSilentIsSwept(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	for _, proto := range []struct {
		name string
		hc   *http.Client
	}{{"HTTP/1.1", httpClientAs(t, "n1")}, {"HTTP/2", h2Client(t, "n1")}} {
		t.Run(proto.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := client.New(url, client.WithHTTPClient(proto.hc))
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.AgentHeartbeats(ctx, "n1")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.BeatAndWait(ctx, v4.AgentHeartbeat{}); err != nil {
				t.Fatal(err)
			}
			if n := srv.agents.SweepBeatStreams(time.Hour); n != 0 {
				t.Fatalf("a sweep ended %d streams that beat within the idle time", n)
			}
			time.Sleep(10 * time.Millisecond)
			if n := srv.agents.SweepBeatStreams(time.Millisecond); n != 1 {
				t.Fatalf("the sweep ended %d streams, want the silent one", n)
			}
			for end := time.Now().Add(5 * time.Second); srv.agents.LiveBeatStreams() != 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%d live streams 5 s after the sweep", srv.agents.LiveBeatStreams())
				}
			}
			if err := beatUntilError(t, s); err == nil {
				t.Fatal("the swept stream still takes beats")
			}
			again, err := c.AgentHeartbeats(ctx, "n1")
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if err := again.BeatAndWait(ctx, v4.AgentHeartbeat{}); err != nil {
				t.Fatalf("a new stream after the sweep: %v", err)
			}
		})
	}
}
