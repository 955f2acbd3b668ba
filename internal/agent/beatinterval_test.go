package agent

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// ackServer answers each beat of a heartbeat stream with the next of acks (the last
// again once they run out), as a server of this version or an earlier one does.
func ackServer(t *testing.T, acks ...string) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Error(err)
			return
		}
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		lines := bufio.NewScanner(r.Body)
		for i := 0; lines.Scan(); i++ {
			w.Write([]byte(acks[min(i, len(acks)-1)] + "\n"))
			rc.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The agent beats at the interval its stream's server asks for, follows it when it
// changes, keeps its own when the server asks for none (an earlier server), and goes
// back to its own without a stream (a new stream's server says its own on its first
// acknowledgement).
func TestAgentObeysTheBeatInterval(t *testing.T) {
	own := 3 * time.Second
	if got := beatInterval(own, nil); got != own {
		t.Fatalf("no stream: %s, want %s", got, own)
	}
	for _, c := range []struct {
		name string
		acks []string
		want []time.Duration // after each beat
	}{
		{"an earlier server asks for nothing", []string{"{}"}, []time.Duration{own, own}},
		{"the server's interval", []string{`{"intervalSeconds":10}`}, []time.Duration{10 * time.Second, 10 * time.Second}},
		{"it changes, and back to its own", []string{`{"intervalSeconds":10}`, `{"intervalSeconds":4}`, "{}"},
			[]time.Duration{10 * time.Second, 4 * time.Second, own}},
		// 18446744074 s is 2^64 ns and 290 ms: taken as it is, the agent would beat
		// every 290 ms.
		{"more than the ceiling is the ceiling", []string{`{"intervalSeconds":3600}`, `{"intervalSeconds":18446744074}`},
			[]time.Duration{v4.MaxHeartbeatInterval, v4.MaxHeartbeatInterval}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := ackServer(t, c.acks...).AgentHeartbeats(ctx, "n1")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b := &beatStream{stream: s}
			for i, want := range c.want {
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := s.BeatAndWait(wctx, v4.AgentHeartbeat{})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if got := beatInterval(own, b); got != want {
					t.Fatalf("after beat %d: %s, want %s", i, got, want)
				}
			}
		})
	}
}
