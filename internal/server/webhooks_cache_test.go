package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestAdmissionHooksCache: a server uses the hooks it read for a second; past it, while
// one admission reads them again the others go on with those read before instead of
// waiting; after this server wrote a configuration, every admission reads them again.
func TestAdmissionHooksCache(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	hooks := newTestHooks(t)
	ctx := context.Background()
	count := func(step string, want int) {
		t.Helper()
		m, v, err := srv.admissionHooks(ctx)
		if err != nil || len(m)+len(v) != want {
			t.Fatalf("%s: %d mutating and %d validating hooks (%v), want %d", step, len(m), len(v), err, want)
		}
	}
	putHook(t, url, "a-label", hooks.config("a-label", "Mutating", "/label", "ns", "Fail"))
	count("written here", 1)
	// Another server's write: this one is not told, and reads it within a second.
	other := []byte(hooks.config("b-deny", "Validating", "/deny", "ns", "Fail"))
	if _, _, err := srv.store.PutAdmissionWebhook(ctx, "b-deny", other, 0); err != nil {
		t.Fatal(err)
	}
	count("within the second", 1)
	ws := srv.webhooks
	ws.mu.Lock()
	ws.loaded, ws.loading = time.Now().Add(-2*webhookCacheTTL), true
	ws.mu.Unlock()
	count("while another admission reads them", 1)
	ws.mu.Lock()
	ws.loading = false
	ws.mu.Unlock()
	count("a second later", 2)
	// Written here while a read is under way: that read's hooks are not used.
	ws.mu.Lock()
	ws.loading = true
	ws.mu.Unlock()
	putHook(t, url, "c-label", hooks.config("c-label", "Mutating", "/label", "ns", "Fail"))
	count("written here during a read", 3)
}

// TestAdmissionHooksCacheRace: admissions read the hooks without pause while this
// server writes configurations; each admission begun after a write returned sees it,
// and the race detector finds no unguarded handoff of the hooks.
func TestAdmissionHooksCacheRace(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	hooks := newTestHooks(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, _, err := srv.admissionHooks(ctx); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 5 {
		name := fmt.Sprintf("h%d-label", i)
		putHook(t, url, name, hooks.config(name, "Mutating", "/label", "ns", "Fail"))
		if m, _, err := srv.admissionHooks(context.Background()); err != nil || len(m) != i+1 {
			t.Errorf("after writing %d hooks an admission sees %d (%v)", i+1, len(m), err)
		}
	}
	cancel()
	wg.Wait()
}
