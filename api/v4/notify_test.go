package v4

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func baseNotify() *Notify {
	n := &Notify{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindNotify},
		Metadata: ObjectMeta{Name: "ops", Namespace: "ns-a"},
		Spec:     NotifySpec{URL: "https://hooks.example.test/berth?team=a"}}
	Default(n)
	return n
}

func notifyWith(f func(n *Notify)) Object { n := baseNotify(); f(n); return n }

func TestNotifyDefaults(t *testing.T) {
	docs, err := Parse([]byte(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"ops"},
		"spec":{"url":"http://127.0.0.1:9/cb","events":["TASKGROUP.RESTARTSTORM","node.lost"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	n := docs[0].Object.(*Notify)
	if n.Metadata.Namespace != DefaultNamespace || n.Spec.TimeoutSeconds != DefaultNotifyTimeout ||
		n.Spec.MaxRetries == nil || *n.Spec.MaxRetries != DefaultNotifyMaxRetries {
		t.Errorf("defaults not applied: %+v %+v", n.Metadata, n.Spec)
	}
	if want := []string{NotifyTaskGroupRestartStorm, NotifyNodeLost}; !slices.Equal(n.Spec.Events, want) {
		t.Errorf("events %q, want %q", n.Spec.Events, want)
	}
	roundTrip(t, n)

	// An explicit 0 means "send once", not the default.
	docs, err = Parse([]byte(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"ops"},"spec":{"url":"http://h/","maxRetries":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := docs[0].Object.(*Notify).Spec.MaxRetries; r == nil || *r != 0 {
		t.Errorf("maxRetries 0 must stay 0, got %v", r)
	}
}

func TestNotifyRules(t *testing.T) {
	retries := func(n int) func(*Notify) { return func(x *Notify) { x.Spec.MaxRetries = &n } }
	runRules(t, []ruleCase{
		{"url required", notifyWith(func(n *Notify) { n.Spec.URL = "" }), "spec.url", "required"},
		{"url scheme", notifyWith(func(n *Notify) { n.Spec.URL = "ftp://h/x" }), "spec.url", "http:// or https://"},
		{"url relative", notifyWith(func(n *Notify) { n.Spec.URL = "/hook" }), "spec.url", "http:// or https://"},
		{"url no host", notifyWith(func(n *Notify) { n.Spec.URL = "http:///x" }), "spec.url", "must name a host"},
		{"url credentials", notifyWith(func(n *Notify) { n.Spec.URL = "https://u:p@h/x" }), "spec.url", "spec.headers"},
		{"url unparsable", notifyWith(func(n *Notify) { n.Spec.URL = "http://h/%zz" }), "spec.url", "must be a URL"},
		{"url too long", notifyWith(func(n *Notify) { n.Spec.URL = "http://h/" + strings.Repeat("a", 3000) }), "spec.url", "at most 2048"},
		{"event unknown", notifyWith(func(n *Notify) { n.Spec.Events = []string{"taskgroup.failed", "pod.down"} }), "spec.events[1]", `"taskgroup.failed"`},
		{"event twice", notifyWith(func(n *Notify) { n.Spec.Events = []string{"node.lost", "node.lost"} }), "spec.events[1]", "listed twice"},
		{"namespace bad", notifyWith(func(n *Notify) { n.Spec.Namespaces = []string{"ns_b"} }), "spec.namespaces[0]", "lowercase"},
		{"namespace twice", notifyWith(func(n *Notify) { n.Spec.Namespaces = []string{"a", "a"} }), "spec.namespaces[1]", "listed twice"},
		{"star not alone", notifyWith(func(n *Notify) { n.Spec.Namespaces = []string{"a", "*"} }), "spec.namespaces[1]", "only entry"},
		{"header name", notifyWith(func(n *Notify) { n.Spec.Headers = map[string]string{"X Token": "a"} }), `spec.headers["X Token"]`, "HTTP header name"},
		{"header berth sets", notifyWith(func(n *Notify) { n.Spec.Headers = map[string]string{"content-type": "text/plain"} }), "spec.headers.content-type", "set by berth"},
		{"header value", notifyWith(func(n *Notify) { n.Spec.Headers = map[string]string{"X-Token": "a\r\nHost: evil"} }), "spec.headers.X-Token", "control characters"},
		{"timeout negative", notifyWith(func(n *Notify) { n.Spec.TimeoutSeconds = -1 }), "spec.timeoutSeconds", "1-300"},
		{"timeout too long", notifyWith(func(n *Notify) { n.Spec.TimeoutSeconds = 301 }), "spec.timeoutSeconds", "1-300"},
		{"retries negative", notifyWith(retries(-1)), "spec.maxRetries", "0-10"},
		{"retries too many", notifyWith(retries(11)), "spec.maxRetries", "0-10"},
		{"name", notifyWith(func(n *Notify) { n.Metadata.Name = "Ops" }), "metadata.name", "lowercase"},
	})
}

func TestNotifyValidExamples(t *testing.T) {
	for _, n := range []*Notify{
		baseNotify(),
		notifyWith(func(n *Notify) {
			n.Spec.Events = NotifyEvents()
			n.Spec.Namespaces = []string{"*"}
			n.Spec.Headers = map[string]string{"Authorization": "Bearer abc", "X-Team": "ops"}
			zero := 0
			n.Spec.MaxRetries = &zero
		}).(*Notify),
		notifyWith(func(n *Notify) {
			n.Spec.Namespaces = []string{DefaultNamespace, "ns-b"}
			n.Spec.URL = "http://[::1]:8080/x"
		}).(*Notify),
	} {
		if errs := Validate(n); len(errs) > 0 {
			t.Errorf("%+v: %v", n.Spec, errs)
		}
	}
}

func TestNotifyStatusIsBerths(t *testing.T) {
	docs, err := Parse([]byte(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"ops"},
		"spec":{"url":"http://h/"},"status":{"delivered":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	n := docs[0].Object.(*Notify)
	if n.Status != (NotifyStatus{}) {
		t.Errorf("submitted status must be dropped, got %+v", n.Status)
	}
	stored := *n
	stored.Status = NotifyStatus{Delivered: 2, LastDelivery: &NotifyDelivery{Time: time.Now(), Event: NotifyNodeLost, Attempts: 1, Code: 200}}
	if !SameContent(n, &stored) {
		t.Error("status must not count as content")
	}
	if n.Status != (NotifyStatus{}) || stored.Status.Delivered != 2 {
		t.Error("SameContent must not change its arguments")
	}
	CarryStatus(n, &stored)
	if n.Status.Delivered != 2 {
		t.Errorf("CarryStatus: %+v", n.Status)
	}
	n.Status.Delivered = 5
	CarryStatus(n, &stored)
	if n.Status.Delivered != 5 {
		t.Error("CarryStatus must not override a status the writer set")
	}
}

func TestNotifyUnknownFieldHasPath(t *testing.T) {
	_, err := ParseValidated([]byte(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"ops"},"spec":{"url":"http://h/","retries":3}}`), ValidateStrict)
	if err == nil || !strings.Contains(err.Error(), `spec.retries: unknown field "retries"`) {
		t.Fatalf("want the unknown field named with its path, got %v", err)
	}
}
