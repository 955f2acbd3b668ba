package webhook

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// parallelHooks is a hook server for the validating hooks' parallel calls: the path
// /NAME/allow or /NAME/deny answers after ?ms= milliseconds (or never: /NAME/hang),
// and it records what each call saw and how many calls it held at once.
type parallelHooks struct {
	srv *httptest.Server
	mu  sync.Mutex
	// objects and uids are what the calls sent, by hook name; now and most count the
	// calls in progress.
	objects   map[string]string
	uids      map[string]bool
	now, most int
}

func newParallelHooks(t *testing.T) *parallelHooks {
	p := &parallelHooks{objects: map[string]string{}, uids: map[string]bool{}}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *parallelHooks) serve(w http.ResponseWriter, r *http.Request) {
	var rv Review
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Request == nil {
		http.Error(w, "not a review", http.StatusBadRequest)
		return
	}
	name, verdict, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	p.mu.Lock()
	p.objects[name], p.uids[rv.Request.UID] = string(rv.Request.Object), true
	p.now++
	p.most = max(p.most, p.now)
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.now--; p.mu.Unlock() }()
	wait, _ := time.ParseDuration(r.URL.Query().Get("ms") + "ms")
	if verdict == "hang" {
		wait = time.Hour
	}
	select {
	case <-time.After(wait):
	case <-r.Context().Done():
		panic(http.ErrAbortHandler) // no answer at all, not an empty one
	}
	resp := &Response{UID: rv.Request.UID, Allowed: verdict == "allow"}
	if !resp.Allowed {
		resp.Status = &Status{Message: name + " says no", Code: 403}
	}
	json.NewEncoder(w).Encode(Review{Response: resp})
}

// hook is a validating hook named name at path ("deny?ms=50").
func (p *parallelHooks) hook(name, path string, timeout time.Duration, ignore bool) *Hook {
	pool := x509.NewCertPool()
	pool.AddCert(p.srv.Certificate())
	return &Hook{Config: "c", Name: name, URL: p.srv.URL + "/" + name + "/" + path, Pool: pool, Timeout: timeout, Ignore: ignore}
}

func TestValidateParallel(t *testing.T) {
	type spec struct {
		name, path string
		ignore     bool
	}
	cases := []struct {
		name  string
		hooks []spec
		want  string // how the refusal's message starts; "" allows
		// longest bounds the whole step: the calls run at once, not one after the other.
		longest time.Duration
	}{
		{"all allow", []spec{{"a", "allow?ms=150", false}, {"b", "allow?ms=150", false}, {"c", "allow?ms=150", false}}, "", 400 * time.Millisecond},
		{"one refuses, the others allow", []spec{{"a", "allow", false}, {"b", "deny", false}, {"c", "allow", false}}, "c/b denied the request: b says no", time.Second},
		// b answers last, yet refuses first in the hooks' order: the answer never depends on timing.
		{"first in order wins", []spec{{"a", "allow", false}, {"b", "deny?ms=200", false}, {"c", "deny", false}}, "c/b denied the request: b says no", time.Second},
		{"a slow hook fails", []spec{{"a", "allow", false}, {"b", "hang", false}, {"c", "deny", false}}, "c/b failed and its failurePolicy is Fail: calling admission webhook c/b: ", time.Second},
		{"a slow hook with Ignore", []spec{{"a", "allow", false}, {"b", "hang", true}, {"c", "deny", false}}, "c/c denied the request: c says no", time.Second},
		{"Ignore lets it through", []spec{{"a", "hang", true}, {"b", "hang", true}, {"c", "allow", false}}, "", time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newParallelHooks(t)
			var hooks []*Hook
			for _, s := range tc.hooks {
				hooks = append(hooks, p.hook(s.name, s.path, 300*time.Millisecond, s.ignore))
			}
			start := time.Now()
			err := NewClient(Options{}).Validate(context.Background(), hooks, Request{Object: []byte(`{"x":1}`)})
			took := time.Since(start)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%v, want allowed", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "admission webhook "+tc.want)):
				t.Fatalf("%v, want admission webhook %s", err, tc.want)
			case took > tc.longest:
				t.Fatalf("took %s, want under %s: the calls are not made at once", took, tc.longest)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.objects) != len(hooks) {
				t.Fatalf("%d hooks called, want all %d: %v", len(p.objects), len(hooks), p.objects)
			}
		})
	}
}

// TestValidateSharedReview: every hook reads the same object, each call has its own
// uid, and no more than MaxParallel calls of one write run at once.
func TestValidateSharedReview(t *testing.T) {
	p := newParallelHooks(t)
	var hooks []*Hook
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		hooks = append(hooks, p.hook(n, "allow?ms=50", 5*time.Second, false))
	}
	obj := `{"kind":"process","metadata":{"name":"web","labels":{"a":"<b>"}}}`
	if err := NewClient(Options{MaxParallel: 2}).Validate(context.Background(), hooks, Request{Object: []byte(obj)}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.most != 2 || len(p.uids) != len(hooks) {
		t.Fatalf("%d calls at once (want 2), %d distinct uids (want %d)", p.most, len(p.uids), len(hooks))
	}
	for n, got := range p.objects {
		if !jsonEqual([]byte(got), []byte(obj)) {
			t.Fatalf("hook %s saw %s, want %s", n, got, obj)
		}
	}
}

// TestEncodeReview: the review sent is the one encoding/json writes, uid included.
func TestEncodeReview(t *testing.T) {
	req := Request{Kind: "process", Operation: "CREATE", Namespace: "ns", Name: "uid", Object: []byte(`{"uid":""}`),
		UserInfo: UserInfo{Username: `"uid":""`, Policies: []byte(`[{"name":"p"}]`)}}
	body, err := encodeReview(&req)
	if err != nil {
		t.Fatal(err)
	}
	req.UID = "0b6c-uid"
	want, err := json.Marshal(Review{APIVersion: ReviewAPIVersion, Kind: "AdmissionReview", Request: &req})
	if err != nil {
		t.Fatal(err)
	}
	if got := body.with(req.UID); string(got) != string(want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var ce *CallError
	if _, err := NewClient(Options{}).Call(context.Background(), &Hook{Name: "x", URL: "https://127.0.0.1:1"},
		&Request{Object: []byte(`{`)}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "encode the review") {
		t.Fatalf("%v, want the bad object refused before any call", err)
	}
}

// TestValidateStopsWhenCancelled: once the write's context ends, the hooks not yet
// called are not called (nor counted as failed, nor their events recorded), the calls in
// flight end, and the write is refused with the context's error even when every hook
// has failurePolicy Ignore.
func TestValidateStopsWhenCancelled(t *testing.T) {
	p := newParallelHooks(t)
	var hooks []*Hook
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		hooks = append(hooks, p.hook(n, "hang", 5*time.Second, true))
	}
	var mu sync.Mutex
	observed := 0
	c := NewClient(Options{MaxParallel: 2, Observe: func(*Hook, *Request, Outcome, time.Duration, error) {
		mu.Lock()
		observed++
		mu.Unlock()
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Validate(ctx, hooks, Request{Object: []byte(`{"x":1}`)})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s: the calls in flight outlived the context", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the context's error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if observed != 2 {
		t.Fatalf("%d calls observed, want the 2 in flight when the context ended", observed)
	}
}
