package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A heartbeat stream whose connection breaks before the server answered (the server
// stopped) fails, instead of holding the call (and the agent's shutdown) forever: Go's
// transport waits for the request body's reader, and the body is a pipe that gets its
// first line only after the answer.
func TestAgentHeartbeatsConnectionBreaksBeforeTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close() // no answer: the connection just ends
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	old := beatStreamAnswerWait
	beatStreamAnswerWait = 300 * time.Millisecond
	defer func() { beatStreamAnswerWait = old }()

	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"no deadline: the answer wait ends it", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}},
		{"a context that ends", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() {
				s, err := c.AgentHeartbeats(ctx, "n1")
				if s != nil {
					s.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a stream whose connection broke before the answer opened")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("AgentHeartbeats still waits 10 s after its connection broke")
			}
		})
	}
}
