package webhook

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func ptr[T any](v T) *T { return &v }

func TestMatches(t *testing.T) {
	hook := func(edit func(*v4.AdmissionWebhook)) *Hook {
		c := &v4.AdmissionWebhook{Kind: v4.KindAdmissionWebhook, Metadata: v4.WebhookMeta{Name: "c"},
			Webhooks: []v4.Webhook{{Name: "h", ClientConfig: v4.WebhookClientConfig{URL: "https://h.example"},
				Rules: []v4.WebhookRule{{Operations: []string{"CREATE", "UPDATE"}, Kinds: []string{"apps", "deploy*"}}}}}}
		if edit != nil {
			edit(c)
		}
		m, v := Compile([]*v4.AdmissionWebhook{c})
		return append(m, v...)[0]
	}
	app := Attributes{Operation: v4.AdmitCreate, Kind: v4.KindApplication, Namespace: "ns-a", Labels: map[string]string{"tier": "web"}}
	with := func(edit func(*Attributes)) Attributes { a := app; edit(&a); return a }
	cases := []struct {
		name string
		hook *Hook
		attr Attributes
		want bool
	}{
		{"kind by short name", hook(nil), app, true},
		{"kind by glob", hook(nil), with(func(a *Attributes) { a.Kind = v4.KindDeployment }), true},
		{"other kind", hook(nil), with(func(a *Attributes) { a.Kind = v4.KindService }), false},
		{"other operation", hook(nil), with(func(a *Attributes) { a.Operation = v4.AdmitDelete }), false},
		{"namespace In glob", hook(func(c *v4.AdmissionWebhook) {
			c.Webhooks[0].NamespaceSelector = &v4.WebhookNamespaceSelector{Operator: "In", Values: []string{"ns-*"}}
		}), app, true},
		{"namespace NotIn", hook(func(c *v4.AdmissionWebhook) {
			c.Webhooks[0].NamespaceSelector = &v4.WebhookNamespaceSelector{Operator: "NotIn", Values: []string{"ns-a"}}
		}), app, false},
		{"namespace by Kubernetes' name label", hook(func(c *v4.AdmissionWebhook) {
			c.Webhooks[0].NamespaceSelector = &v4.WebhookNamespaceSelector{MatchExpressions: []v4.WebhookLabelSelectorReq{
				{Key: v4.NamespaceNameLabel, Operator: "NotIn", Values: []string{"kube-system"}}}}
		}), app, true},
		{"object selector", hook(func(c *v4.AdmissionWebhook) {
			c.Webhooks[0].ObjectSelector = &v4.WebhookLabelSelector{MatchLabels: map[string]string{"tier": "web"}}
		}), app, true},
		{"object selector misses", hook(func(c *v4.AdmissionWebhook) {
			c.Webhooks[0].ObjectSelector = &v4.WebhookLabelSelector{MatchExpressions: []v4.WebhookLabelSelectorReq{{Key: "tier", Operator: "DoesNotExist"}}}
		}), app, false},
		{"an update matches on its old labels", hook(func(c *v4.AdmissionWebhook) {
			c.Webhooks[0].ObjectSelector = &v4.WebhookLabelSelector{MatchLabels: map[string]string{"tier": "db"}}
		}), with(func(a *Attributes) { a.Operation, a.OldLabels = v4.AdmitUpdate, map[string]string{"tier": "db"} }), true},
		{"BCS resourcesRef", hook(func(c *v4.AdmissionWebhook) {
			c.Kind, c.ResourcesRef, c.Webhooks[0].Rules = v4.WebhookKindBCS, &v4.WebhookResourcesRef{Operation: "Create", Kind: "application"}, nil
			c.AdmissionWebhooks, c.Webhooks = c.Webhooks, nil
		}), app, true},
	}
	for _, c := range cases {
		if got := c.hook.Matches(c.attr); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCompileOrder(t *testing.T) {
	mk := func(name, typ string, hooks ...string) *v4.AdmissionWebhook {
		c := &v4.AdmissionWebhook{Kind: v4.KindAdmissionWebhook, Metadata: v4.WebhookMeta{Name: name}}
		for _, h := range hooks {
			c.Webhooks = append(c.Webhooks, v4.Webhook{Name: h, Type: typ})
		}
		return c
	}
	m, v := Compile([]*v4.AdmissionWebhook{mk("b", "Mutating", "z", "a"), mk("c", "Validating", "v"), mk("a", "", "m")})
	var got []string
	for _, h := range append(m, v...) {
		got = append(got, h.ID())
	}
	if want := "a/m b/z b/a c/v"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s (mutating by configuration name, list order within, then validating)", got, want)
	}
}

func TestApplyPatch(t *testing.T) {
	doc := `{"apiVersion":"v4","kind":"application","metadata":{"name":"a","namespace":"n","labels":{"x":"1"}},"spec":{"instance":1}}`
	cases := []struct {
		name, patch, field, want string
	}{
		{"add a label", `[{"op":"add","path":"/metadata/labels/team","value":"blue"}]`, "", `"team":"blue"`},
		{"rename", `[{"op":"replace","path":"/metadata/name","value":"b"}]`, "metadata.name", ""},
		{"move namespace", `[{"op":"add","path":"/metadata/namespace","value":"other"}]`, "metadata.namespace", ""},
		{"replace metadata", `[{"op":"replace","path":"/metadata","value":{"name":"b"}}]`, "metadata.name", ""},
		{"replace the whole", `[{"op":"replace","path":"","value":{}}]`, "metadata.name", ""},
		{"kind", `[{"op":"replace","path":"/kind","value":"process"}]`, "kind", ""},
		{"move from name", `[{"op":"move","from":"/metadata/name","path":"/spec/n"}]`, "metadata.name", ""},
		{"escaped pointer", `[{"op":"replace","path":"/metadata~1name","value":"b"}]`, "metadata.name", ""},
		{"test of the name is fine", `[{"op":"test","path":"/metadata/name","value":"a"}]`, "", `"name":"a"`},
	}
	for _, c := range cases {
		out, err := ApplyPatch([]byte(doc), []byte(c.patch))
		var fe *ForbiddenPatchError
		switch {
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("%s: %v, want %s refused", c.name, err, c.field)
		case c.field == "" && (err != nil || !strings.Contains(string(out), c.want)):
			t.Errorf("%s: %s %v, want %s", c.name, out, err, c.want)
		}
	}
	if _, err := ApplyPatch([]byte(doc), []byte(`[{"op":"remove","path":"/nope"}]`)); err == nil {
		t.Error("a patch of a missing path applied")
	}
}

func TestPatchOf(t *testing.T) {
	cases := []struct {
		name string
		resp Response
		want string
		bad  bool
	}{
		{"base64", Response{PatchType: "JSONPatch", Patch: json.RawMessage(`"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d"`)}, `[{"op":"add","path":"/a","value":1}]`, false},
		{"array", Response{Patch: json.RawMessage(`[]`)}, `[]`, false},
		{"none", Response{}, ``, false},
		{"merge patch", Response{PatchType: "MergePatch", Patch: json.RawMessage(`[]`)}, ``, true},
		{"object", Response{Patch: json.RawMessage(`{"a":1}`)}, ``, true},
		{"not base64", Response{Patch: json.RawMessage(`"%%%"`)}, ``, true},
	}
	for _, c := range cases {
		got, err := c.resp.PatchOf()
		if (err != nil) != c.bad || string(got) != c.want {
			t.Errorf("%s: %q %v", c.name, got, err)
		}
	}
}

// hookServer answers each path with a behaviour; calls counts the calls by path.
type hookServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
	// block holds /slow until the test ends.
	block chan struct{}
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{calls: map[string]int{}, block: make(chan struct{})}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() { close(h.block); h.Close() })
	return h
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.calls[r.URL.Path]++
	n := h.calls[r.URL.Path]
	h.mu.Unlock()
	var rv Review
	json.NewDecoder(r.Body).Decode(&rv)
	resp := &Response{UID: rv.Request.UID, Allowed: true}
	var obj map[string]any
	json.Unmarshal(rv.Request.Object, &obj)
	switch r.URL.Path {
	case "/a": // adds a, and once b is there, b2
		if _, ok := obj["b"]; ok {
			resp.Patch = json.RawMessage(`[{"op":"add","path":"/b2","value":1}]`)
		} else {
			resp.Patch = json.RawMessage(`[{"op":"add","path":"/a","value":1}]`)
		}
	case "/b":
		resp.Patch = json.RawMessage(`[{"op":"add","path":"/b","value":1}]`)
	case "/same": // sets what is there
		resp.Patch = json.RawMessage(`[{"op":"add","path":"/x","value":1}]`)
	case "/deny":
		resp.Allowed, resp.Status = false, &Status{Message: "no", Code: 409}
	case "/slow":
		select {
		case <-r.Context().Done():
		case <-h.block:
		}
		return
	case "/500":
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	case "/uid":
		resp.UID = "other"
	case "/big":
		resp.Warnings = []string{strings.Repeat("w", 2048)}
	}
	_ = n
	json.NewEncoder(w).Encode(Review{Response: resp})
}

func (h *hookServer) hook(path string, edit func(*Hook)) *Hook {
	pool := x509.NewCertPool()
	pool.AddCert(h.Certificate())
	k := &Hook{Config: "c", Name: strings.TrimPrefix(path, "/"), URL: h.URL + path, Pool: pool, Mutating: true, Timeout: 5 * time.Second}
	if edit != nil {
		edit(k)
	}
	return k
}

func TestMutateOrderAndReinvocation(t *testing.T) {
	h := newHookServer(t)
	c := NewClient(Options{})
	obj := []byte(`{"x":1}`)
	// a then b: b changed the object after a, so a (IfNeeded) runs again and adds b2.
	out, changed, err := c.Mutate(context.Background(), []*Hook{h.hook("/a", func(k *Hook) { k.Reinvoke = true }), h.hook("/b", nil)}, Request{Object: obj})
	if err != nil || !changed || !strings.Contains(string(out), `"b2"`) || h.calls["/a"] != 2 {
		t.Fatalf("%s %v %v, /a called %d times; want b2 from a's second call", out, changed, err, h.calls["/a"])
	}
	// Without IfNeeded it is not called again; a patch that sets what is there is no change.
	h.calls = map[string]int{}
	out, changed, err = c.Mutate(context.Background(), []*Hook{h.hook("/a", nil), h.hook("/b", nil), h.hook("/same", func(k *Hook) { k.Reinvoke = true })}, Request{Object: obj})
	if err != nil || strings.Contains(string(out), "b2") || h.calls["/a"] != 1 || h.calls["/same"] != 1 || !changed {
		t.Fatalf("%s %v %v %v", out, changed, err, h.calls)
	}
	// Patches that only set what is there change nothing, whether or not a hook may be
	// called again (without one the chain compares once, at its end).
	for _, reinvoke := range []bool{false, true} {
		out, changed, err = c.Mutate(context.Background(), []*Hook{h.hook("/same", nil), h.hook("/same", func(k *Hook) { k.Reinvoke = reinvoke })}, Request{Object: obj})
		if err != nil || changed || string(out) != string(obj) {
			t.Fatalf("reinvoke %v: %s %v %v, want the object unchanged", reinvoke, out, changed, err)
		}
	}
}

func TestFailurePolicies(t *testing.T) {
	h := newHookServer(t)
	c := NewClient(Options{MaxResponse: 1024})
	obj := []byte(`{"x":1}`)
	cases := []struct {
		path   string
		ignore bool
		status int // 0: allowed
		want   string
	}{
		{"/deny", false, 409, "denied the request: no"},
		{"/deny", true, 409, "denied"}, // a denial is an answer, not a failure: Ignore does not apply
		{"/500", false, 502, "HTTP 500"},
		{"/500", true, 0, ""},
		{"/uid", false, 502, "response.uid"},
		{"/big", false, 502, "larger than 1024 bytes"},
		{"/slow", false, 502, "timeout"},
		{"/slow", true, 0, ""},
	}
	for _, tc := range cases {
		hk := h.hook(tc.path, func(k *Hook) { k.Ignore, k.Timeout, k.Mutating = tc.ignore, 300*time.Millisecond, false })
		err := c.Validate(context.Background(), []*Hook{hk}, Request{Object: obj})
		var ref *Refusal
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%s ignore=%v: %v, want through", tc.path, tc.ignore, err)
		case tc.status != 0 && (!errors.As(err, &ref) || ref.Status() != tc.status || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s ignore=%v: %v, want %d %q", tc.path, tc.ignore, err, tc.status, tc.want)
		}
	}
}

func TestBoundedInFlight(t *testing.T) {
	h := newHookServer(t)
	c := NewClient(Options{MaxInFlight: 1})
	// Two hooks of one ID, URL and trust root share the turns: the first holds the only one.
	holder := h.hook("/slow", func(k *Hook) { k.Timeout, k.Mutating = time.Minute, false })
	waiter := h.hook("/slow", func(k *Hook) { k.Timeout, k.Mutating, k.Pool = 200*time.Millisecond, false, holder.Pool })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Validate(ctx, []*Hook{holder}, Request{}) }()
	for i := 0; ; i++ { // until the hook server holds the first call
		h.mu.Lock()
		n := h.calls["/slow"]
		h.mu.Unlock()
		if n > 0 {
			break
		}
		if i > 500 {
			t.Fatal("the first call never reached the hook")
		}
		time.Sleep(10 * time.Millisecond)
	}
	err := c.Validate(context.Background(), []*Hook{waiter}, Request{})
	cancel()
	<-done
	if err == nil || !strings.Contains(err.Error(), "calls in flight") {
		t.Fatalf("%v, want the second call refused for want of a turn", err)
	}
}

func TestOwnAddressRefused(t *testing.T) {
	h := newHookServer(t)
	c := NewClient(Options{Forbidden: func(string) bool { return true }})
	err := c.Validate(context.Background(), []*Hook{h.hook("/deny", func(k *Hook) { k.Mutating = false })}, Request{})
	if err == nil || !strings.Contains(err.Error(), "berth's own API") {
		t.Fatalf("%v, want the dial refused", err)
	}
}

// Hooks of one server and trust root share its connections; a hook verified by another
// root never gets a connection made under the first.
func TestHooksShareConnectionsByTrustRoot(t *testing.T) {
	h := &hookServer{calls: map[string]int{}, block: make(chan struct{})}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	var opened sync.Map
	h.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Store(c.RemoteAddr().String(), true)
		}
	}
	h.StartTLS()
	t.Cleanup(func() { close(h.block); h.Close() })
	count := func() (n int) {
		opened.Range(func(any, any) bool { n++; return true })
		return n
	}
	c := NewClient(Options{})
	pool := x509.NewCertPool()
	pool.AddCert(h.Certificate())
	shared := func(path string) *Hook {
		return h.hook(path, func(k *Hook) { k.Pool, k.Mutating = pool, false })
	}
	for _, path := range []string{"/a", "/b", "/same", "/a"} {
		if err := c.Validate(context.Background(), []*Hook{shared(path)}, Request{Object: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 1 {
		t.Errorf("4 calls to 3 hooks of one server and root opened %d connections, want 1", n)
	}
	other := h.hook("/b", func(k *Hook) { k.Mutating = false }) // a pool of its own
	if err := c.Validate(context.Background(), []*Hook{other}, Request{Object: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("a hook of another trust root opened %d connections in all, want 2", n)
	}
	c.Forget([]*Hook{other})
	if len(c.pools) != 1 || len(c.conns) != 1 {
		t.Errorf("after Forget: %d pools, %d hooks' turns; want 1 and 1", len(c.pools), len(c.conns))
	}
}
