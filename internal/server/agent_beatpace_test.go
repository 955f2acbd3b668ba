package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agentapi"
	"github.com/berthhq/berth/internal/client"
)

// The server tells each agent an interval that keeps the cluster's beats under
// --max-heartbeats-per-second (here 1 a second: 4 nodes beat every 4 s), and the node's
// lease takes the TTL of that interval before the agent hears of it; when the cluster
// shrinks, the lease keeps its longer TTL until the agent beat at the shorter interval.
// The
// acknowledgement still reads as one to an agent of an earlier version (an error body
// without an error).
func TestAgentHeartbeatStreamPace(t *testing.T) {
	url := newTestServer(t, Config{MaxHeartbeatsPerSecond: 1})
	for i := range 4 {
		wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON(fmt.Sprintf("n%d", i+1), "")), http.StatusCreated)
	}
	r := agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/heartbeats", "{}\n")
	var old v4.ErrorBody
	if err := json.Unmarshal([]byte(strings.SplitN(string(r.body), "\n", 2)[0]), &old); err != nil || old.Error != nil {
		t.Fatalf("an earlier agent reads the acknowledgement %q as %+v, %v", r.body, old, err)
	}

	c, err := client.New(url, client.WithHTTPClient(httpClientAs(t, "n1")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.AgentHeartbeats(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.BeatAndWait(wctx, v4.AgentHeartbeat{}); err != nil {
		t.Fatal(err)
	}
	// The server's node cache may not hold all 4 nodes yet: the interval follows it.
	for end := time.Now().Add(10 * time.Second); s.Interval() != 4*time.Second; time.Sleep(agentapi.MinBeatGap) {
		if time.Now().After(end) {
			t.Fatalf("the server asks for %s, want 4s for 4 nodes at 1 beat a second", s.Interval())
		}
		if err := s.Beat(v4.AgentHeartbeat{}); err != nil {
			t.Fatal(err)
		}
	}
	// 10 s at the floor of 3 s holds 3 beats: a beat every 4 s gets 3 s more (13 s), and
	// a lease that moves takes the TTL of twice the interval (25 s).
	if ttl, ok := testStore.LeaseTTL("n1"); !ok || ttl != 25*time.Second {
		t.Fatalf("the node's lease has a ttl of %s (%v), want 25s", ttl, ok)
	}

	// The cluster shrinks to one node: the agent is told to beat at its own interval (no
	// interval: the floor), and the lease keeps its longer TTL until the agent has beaten
	// at it.
	for i := 2; i <= 4; i++ {
		wantStatus(t, call(t, http.MethodDelete, fmt.Sprintf("%s/v1/nodes/n%d", url, i), ""), http.StatusOK)
	}
	// One beat at a time, each given 2 s for its acknowledgement: the beat that told is
	// the last one sent, so the lease cannot have been shrunk yet.
	for end := time.Now().Add(20 * time.Second); s.Interval() != 0; {
		if time.Now().After(end) {
			t.Fatalf("the server asks for %s, want none (the agent's own) for 1 node", s.Interval())
		}
		time.Sleep(agentapi.MinBeatGap)
		if err := s.Beat(v4.AgentHeartbeat{}); err != nil {
			t.Fatal(err)
		}
		for wait := time.Now().Add(2 * time.Second); s.Interval() != 0 && time.Now().Before(wait); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if ttl, _ := testStore.LeaseTTL("n1"); ttl != 25*time.Second {
		t.Fatalf("the lease's ttl is %s as the agent is told to beat faster, want 25s until it did", ttl)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(agentapi.MinBeatGap) {
		if ttl, _ := testStore.LeaseTTL("n1"); ttl == 10*time.Second {
			break
		}
		if time.Now().After(end) {
			ttl, _ := testStore.LeaseTTL("n1")
			t.Fatalf("the lease's ttl is %s after the agent beat at 3s, want 10s", ttl)
		}
		if err := s.Beat(v4.AgentHeartbeat{}); err != nil {
			t.Fatal(err)
		}
	}
}
