package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// backend is one fake server answering every request with a fixed status, counting them.
type backend struct {
	url    string
	status int
	hits   atomic.Int32
}

func newBackend(t *testing.T, status int) *backend {
	t.Helper()
	b := &backend{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(b.status)
		if b.status == http.StatusOK {
			w.Write([]byte(`{"self":{"id":"` + b.url + `"},"leader":"x","etcd":"embedded","members":[]}`))
			return
		}
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"status %s"}}`, b.status, http.StatusText(b.status))
	}))
	b.url = srv.URL
	t.Cleanup(srv.Close)
	return b
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

func TestFailover(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int // 0: nothing listens there
		want     int   // index of the server that answers, -1 for an error
		wantErr  string
	}{
		{name: "first answers", statuses: []int{200, 200}, want: 0},
		{name: "first unreachable", statuses: []int{0, 200}, want: 1},
		{name: "first without quorum", statuses: []int{503, 0, 200}, want: 2},
		{name: "gateway errors", statuses: []int{502, 504, 200}, want: 2},
		{name: "a real error is not failed over", statuses: []int{404, 200}, want: -1, wantErr: "Not Found"},
		{name: "all unreachable", statuses: []int{0, 0}, want: -1, wantErr: "every other server given"},
		{name: "the last 503 is the answer", statuses: []int{0, 503}, want: -1, wantErr: "Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var urls []string
			var backends []*backend
			for _, st := range tt.statuses {
				if st == 0 {
					urls, backends = append(urls, deadURL(t)), append(backends, nil)
					continue
				}
				b := newBackend(t, st)
				urls, backends = append(urls, b.url), append(backends, b)
			}
			c, err := New(strings.Join(urls, ","))
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Cluster(context.Background())
			if tt.want < 0 {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				if c.Server() != urls[0] {
					t.Errorf("current server %s after a failure, want the first still", c.Server())
				}
				return
			}
			if err != nil || info.Self.ID != urls[tt.want] {
				t.Fatalf("answered by %+v (%v), want %s", info, err, urls[tt.want])
			}
			// The one that answered stays current: the next request goes straight to it.
			before := backends[tt.want].hits.Load()
			for i, b := range backends[:tt.want] {
				if b != nil && b.hits.Load() != 1 {
					t.Errorf("server %d asked %d times, want once", i, b.hits.Load())
				}
			}
			if _, err := c.Cluster(context.Background()); err != nil || c.Server() != urls[tt.want] {
				t.Fatalf("second request: %v, current %s", err, c.Server())
			}
			if got := backends[tt.want].hits.Load(); got != before+1 {
				t.Errorf("the current server got %d more requests, want 1", got-before)
			}
			for i, b := range backends[:tt.want] {
				if b != nil && b.hits.Load() != 1 {
					t.Errorf("server %d asked again after the failover", i)
				}
			}
		})
	}
}

// A canceled request is not tried on the other servers.
func TestFailoverStopsOnCancel(t *testing.T) {
	b := newBackend(t, 200)
	c, err := New(deadURL(t) + "," + b.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Cluster(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if b.hits.Load() != 0 {
		t.Fatal("a canceled request went to the next server")
	}
}
