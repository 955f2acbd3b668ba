package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

func TestNotifyType(t *testing.T) {
	cases := []struct {
		e    v4.Event
		want string
	}{
		{v4.Event{Reason: "InstanceFailed", Kind: v4.KindProcess}, v4.NotifyTaskGroupFailed},
		{v4.Event{Reason: "InstanceError", Kind: v4.KindApplication}, v4.NotifyTaskGroupFailed},
		{v4.Event{Reason: "InstanceLost", Kind: v4.KindProcess}, v4.NotifyTaskGroupLost},
		{v4.Event{Reason: "RestartStorm", Kind: v4.KindProcess}, v4.NotifyTaskGroupRestartStorm},
		{v4.Event{Reason: "NoIP", Kind: v4.KindApplication}, v4.NotifyTaskGroupNoIP},
		{v4.Event{Reason: "NodeLost", Kind: v4.KindNode}, v4.NotifyNodeLost},
		{v4.Event{Reason: "NodeLost", Kind: v4.KindProcess}, ""},
		{v4.Event{Reason: "Failed", Kind: v4.KindTaskGroup}, ""}, // the server's own phase record: InstanceFailed covers it
		{v4.Event{Reason: "NotifyFailed", Kind: v4.KindNotify}, ""},
		{v4.Event{Reason: "InstanceRunning", Kind: v4.KindProcess}, ""},
		{v4.Event{Reason: "WorkflowSucceeded", Kind: v4.KindWorkflow}, v4.NotifyWorkflowSucceeded},
		{v4.Event{Reason: "WorkflowFailed", Kind: v4.KindWorkflow}, v4.NotifyWorkflowFailed},
		{v4.Event{Reason: "WorkflowError", Kind: v4.KindWorkflow}, v4.NotifyWorkflowFailed},
		{v4.Event{Reason: "WorkflowSucceeded", Kind: v4.KindJob}, ""},
		{v4.Event{Reason: "JobSucceeded", Kind: v4.KindJob}, v4.NotifyJobSucceeded},
		{v4.Event{Reason: "JobFailed", Kind: v4.KindJob}, v4.NotifyJobFailed},
	}
	for _, tc := range cases {
		if got := notifyType(tc.e); got != tc.want {
			t.Errorf("%s/%s: got %q, want %q", tc.e.Kind, tc.e.Reason, got, tc.want)
		}
	}
}

func TestNotifyWants(t *testing.T) {
	n := func(events, namespaces []string) *v4.Notify {
		return &v4.Notify{Metadata: v4.ObjectMeta{Name: "ops", Namespace: "ns-a"}, Spec: v4.NotifySpec{Events: events, Namespaces: namespaces}}
	}
	inA := v4.Event{Namespace: "ns-a"}
	inB := v4.Event{Namespace: "ns-b"}
	node := v4.Event{Kind: v4.KindNode}
	cases := []struct {
		name string
		n    *v4.Notify
		typ  string
		e    v4.Event
		want bool
	}{
		{"all events, own namespace", n(nil, nil), v4.NotifyTaskGroupFailed, inA, true},
		{"own namespace only", n(nil, nil), v4.NotifyTaskGroupFailed, inB, false},
		{"listed namespace", n(nil, []string{"ns-b"}), v4.NotifyTaskGroupFailed, inB, true},
		{"listed namespaces replace the own", n(nil, []string{"ns-b"}), v4.NotifyTaskGroupFailed, inA, false},
		{"every namespace", n(nil, []string{"*"}), v4.NotifyTaskGroupLost, inB, true},
		{"type filtered out", n([]string{v4.NotifyNodeLost}, nil), v4.NotifyTaskGroupFailed, inA, false},
		{"type listed", n([]string{v4.NotifyNodeLost, v4.NotifyTaskGroupNoIP}, nil), v4.NotifyTaskGroupNoIP, inA, true},
		{"node events ignore namespaces", n(nil, []string{"ns-b"}), v4.NotifyNodeLost, node, true},
		{"node events follow the type filter", n([]string{v4.NotifyTaskGroupFailed}, nil), v4.NotifyNodeLost, node, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wants(tc.n, tc.typ, tc.e); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDoublingBackoffAndRedaction(t *testing.T) {
	b := doublingBackoff(time.Second)
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 32 * time.Second, 7: time.Minute, 40: time.Minute} {
		if got := b(attempt); got != want {
			t.Errorf("attempt %d: %s, want %s", attempt, got, want)
		}
	}
	for in, want := range map[string]string{
		"https://h.test/cb?token=abc": "https://h.test/cb?...",
		"http://127.0.0.1:8080/x":     "http://127.0.0.1:8080/x",
		"http://h/%zz":                "(invalid URL)",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// callbacks is a test callback server: it answers with codes (in turn, then 200) and
// keeps what it received.
type callbacks struct {
	srv   *httptest.Server
	mu    sync.Mutex
	codes []int
	got   []v4.NotifyMessage
	auth  []string
	hold  chan struct{} // when set, requests wait for it to close
}

func newCallbacks(t *testing.T, codes ...int) *callbacks {
	cb := &callbacks{codes: codes}
	cb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cb.hold != nil {
			<-cb.hold
		}
		var m v4.NotifyMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		cb.mu.Lock()
		code := http.StatusOK
		if len(cb.codes) > 0 {
			code, cb.codes = cb.codes[0], cb.codes[1:]
		}
		if code == http.StatusOK {
			cb.got = append(cb.got, m)
			cb.auth = append(cb.auth, r.Header.Get("Authorization"))
		}
		cb.mu.Unlock()
		w.WriteHeader(code)
		w.Write([]byte("answer " + http.StatusText(code)))
	}))
	t.Cleanup(cb.srv.Close)
	return cb
}

func (cb *callbacks) received() []v4.NotifyMessage {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return append([]v4.NotifyMessage(nil), cb.got...)
}

// notifyEnv runs a notify controller against the shared etcd.
type notifyEnv struct {
	*env
	c *NotifyController
	// subscriber is the token that writes the env's notifies: a management token unless
	// a test says otherwise (notify_access_test.go).
	subscriber string
}

// testAdminToken is the management token of the notify tests.
const testAdminToken = "admin1"

func newNotifyEnv(t *testing.T) *notifyEnv {
	t.Helper()
	storetest.Reset(t, testStore)
	if err := testStore.CreateACLToken(context.Background(), &acl.Token{ID: testAdminToken, Management: true, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	caches := cachetest.Registry(t, testStore, RegisterCaches)
	ctx, cancel := context.WithCancel(context.Background())
	c := NewNotifyController(testStore, Options{Logger: storetest.QuietLogger(), Metrics: NewMetrics(), Caches: caches})
	c.backoff = doublingBackoff(time.Millisecond) // the doubling is tested above; keep tests quick
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &notifyEnv{env: &env{t: t, ctx: ctx}, c: c, subscriber: "berth-acl-" + testAdminToken}
}

// notify creates a notify object and waits for the controller to have its sender.
func (e *notifyEnv) notify(name, url string, edit func(*v4.NotifySpec)) {
	e.t.Helper()
	n := &v4.Notify{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNotify},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "ctl"}, Spec: v4.NotifySpec{URL: url}}
	if e.subscriber != "" { // as the API server stamps it (admit_notify.go)
		n.Metadata.Annotations = map[string]string{v4.NotifySubscriberAnnotation: e.subscriber}
	}
	if edit != nil {
		edit(&n.Spec)
	}
	v4.Default(n)
	if errs := v4.Validate(n); len(errs) > 0 {
		e.t.Fatal(errs)
	}
	if err := testStore.Create(context.Background(), n, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually("sender of "+name, func() bool {
		e.c.mu.Lock()
		defer e.c.mu.Unlock()
		return e.c.senders["ctl/"+name] != nil
	})
}

func (e *notifyEnv) record(ev v4.Event) {
	e.t.Helper()
	if err := testStore.RecordEvent(context.Background(), ev); err != nil {
		e.t.Fatal(err)
	}
}

func (e *notifyEnv) notifyStatus(name string) v4.NotifyStatus {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindNotify, "ctl", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*v4.Notify).Status
}

func (e *notifyEnv) failures(name string) []string {
	e.t.Helper()
	storetest.FlushEvents(e.t, testStore)
	evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: "ctl", Kind: v4.KindNotify, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Reason == "NotifyFailed" && ev.Type == v4.EventWarning {
			out = append(out, ev.Message)
		}
	}
	return out
}

func failedEvent(ns, tg string) v4.Event {
	return v4.Event{Type: v4.EventWarning, Reason: "InstanceFailed", Kind: v4.KindProcess, Namespace: ns, Name: "web",
		TaskGroup: tg, Node: "node-1", Message: "instance 0 (" + tg + ") on node-1 is Failed: exit 1"}
}

// Subscribed events arrive once with every field; others (another namespace, a type not
// subscribed, events from before the term) do not.
func TestNotifyDeliversWhatIsSubscribed(t *testing.T) {
	e := newNotifyEnv(t)
	cb := newCallbacks(t)
	e.notify("ops", cb.srv.URL+"/hook?token=t", func(s *v4.NotifySpec) {
		s.Events = []string{v4.NotifyTaskGroupFailed, v4.NotifyNodeLost}
		s.Headers = map[string]string{"Authorization": "Bearer abc"}
	})
	before := failedEvent("ctl", "0.before.ctl.c.1")
	before.Time = e.c.started.Add(-time.Second)
	e.record(before) // older than the term (a previous leader's): never sent
	e.record(failedEvent("other", "0.web.other.c.1"))
	e.record(v4.Event{Type: v4.EventWarning, Reason: "InstanceLost", Kind: v4.KindProcess, Namespace: "ctl", Name: "web"})
	e.record(failedEvent("ctl", "0.web.ctl.c.2"))
	e.record(v4.Event{Type: v4.EventWarning, Reason: "NodeLost", Kind: v4.KindNode, Name: "node-1", Message: "node node-1 is Lost"})
	e.eventually("2 callbacks", func() bool { return len(cb.received()) >= 2 })
	time.Sleep(200 * time.Millisecond) // let anything wrongly sent arrive too
	got := cb.received()
	if len(got) != 2 {
		t.Fatalf("want 2 callbacks, got %+v", got)
	}
	byTG := map[string]v4.NotifyMessage{}
	for _, m := range got {
		byTG[m.TaskGroup+m.Node] = m
	}
	f := byTG["0.web.ctl.c.2node-1"]
	if f.Type != v4.NotifyTaskGroupFailed || f.Level != v4.EventWarning || f.Namespace != "ctl" || f.Kind != v4.KindProcess ||
		f.Name != "web" || f.Reason != "InstanceFailed" || !strings.Contains(f.Message, "exit 1") || f.Time.IsZero() ||
		f.ID == "" || f.Notify != "ctl/ops" {
		t.Errorf("failed callback %+v", f)
	}
	if n := byTG["node-1"]; n.Type != v4.NotifyNodeLost || n.Kind != v4.KindNode || n.Name != "node-1" || n.Namespace != "" {
		t.Errorf("node callback %+v", n)
	}
	for _, a := range cb.auth {
		if a != "Bearer abc" {
			t.Errorf("header not sent: %q", a)
		}
	}
	e.eventually("status", func() bool { return e.notifyStatus("ops").Delivered == 2 })
	if st := e.notifyStatus("ops"); st.LastDelivery == nil || st.LastDelivery.Code != 200 || st.Failed != 0 {
		t.Errorf("status %+v", st)
	}
}

// A callback answering 500 twice is retried until it answers 200; each failed attempt is
// a NotifyFailed event. One that never answers 2xx is given up after maxRetries.
func TestNotifyRetriesThenGivesUp(t *testing.T) {
	e := newNotifyEnv(t)
	flaky := newCallbacks(t, 500, 500)
	e.notify("flaky", flaky.srv.URL, nil)
	dead := newCallbacks(t, 503, 503, 503, 503)
	e.notify("dead", dead.srv.URL+"/?secret=x", func(s *v4.NotifySpec) { one := 1; s.MaxRetries = &one })
	e.record(failedEvent("ctl", "0.web.ctl.c.1"))

	e.eventually("delivery after retries", func() bool { return len(flaky.received()) == 1 })
	e.eventually("status of flaky", func() bool { return e.notifyStatus("flaky").Delivered == 1 })
	if st := e.notifyStatus("flaky"); st.LastDelivery.Attempts != 3 || st.Failed != 0 {
		t.Errorf("flaky status %+v %+v", st, st.LastDelivery)
	}
	fails := e.failures("flaky")
	if len(fails) != 2 || !strings.Contains(fails[0], "HTTP 500: answer Internal Server Error; attempt 1 of 6, retrying in 1ms") ||
		!strings.Contains(fails[1], "attempt 2 of 6, retrying in 2ms") {
		t.Errorf("NotifyFailed events of flaky: %q", fails)
	}

	e.eventually("dead gives up", func() bool { return e.notifyStatus("dead").Failed == 1 })
	st := e.notifyStatus("dead")
	if st.LastFailure == nil || st.LastFailure.Attempts != 2 || st.LastFailure.Code != 503 || st.Delivered != 0 ||
		st.LastFailure.Event != v4.NotifyTaskGroupFailed || !strings.Contains(st.LastFailure.Subject, "0.web.ctl.c.1") {
		t.Errorf("dead status %+v", st.LastFailure)
	}
	fails = e.failures("dead")
	if len(fails) != 2 || !strings.Contains(fails[1], "gave up after 2 attempts") {
		t.Errorf("NotifyFailed events of dead: %q", fails)
	}
	for _, f := range fails {
		if strings.Contains(f, "secret") {
			t.Errorf("the URL's query leaked into an event: %s", f)
		}
	}
}

// A callback that does not answer holds up only its own queue.
func TestNotifySlowCallbackBlocksNoOther(t *testing.T) {
	e := newNotifyEnv(t)
	slow := newCallbacks(t)
	slow.hold = make(chan struct{})
	defer close(slow.hold)
	fast := newCallbacks(t)
	e.notify("slow", slow.srv.URL, nil)
	e.notify("fast", fast.srv.URL, nil)
	e.record(failedEvent("ctl", "0.web.ctl.c.1"))
	e.record(failedEvent("ctl", "0.web.ctl.c.2"))
	e.eventually("the fast callback gets both", func() bool { return len(fast.received()) == 2 })
	if n := len(slow.received()); n != 0 {
		t.Fatalf("the held callback answered %d", n)
	}
}

// Deleting a notify stops its deliveries; a changed spec applies to the next message.
func TestNotifyFollowsItsObject(t *testing.T) {
	e := newNotifyEnv(t)
	first, second := newCallbacks(t), newCallbacks(t)
	e.notify("ops", first.srv.URL, nil)
	e.record(failedEvent("ctl", "0.web.ctl.c.1"))
	e.eventually("first callback", func() bool { return len(first.received()) == 1 })

	o, err := testStore.Get(context.Background(), v4.KindNotify, "ctl", "ops")
	if err != nil {
		t.Fatal(err)
	}
	n := o.(*v4.Notify)
	n.Spec.URL = second.srv.URL
	if err := testStore.Update(context.Background(), n, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("new URL taken", func() bool {
		e.c.mu.Lock()
		defer e.c.mu.Unlock()
		return e.c.senders["ctl/ops"].spec().Spec.URL == second.srv.URL
	})
	e.record(failedEvent("ctl", "0.web.ctl.c.2"))
	e.eventually("second callback", func() bool { return len(second.received()) == 1 })

	if _, err := testStore.Delete(context.Background(), v4.KindNotify, "ctl", "ops", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("sender gone", func() bool {
		e.c.mu.Lock()
		defer e.c.mu.Unlock()
		return e.c.senders["ctl/ops"] == nil
	})
	e.record(failedEvent("ctl", "0.web.ctl.c.3"))
	time.Sleep(200 * time.Millisecond)
	if len(first.received())+len(second.received()) != 2 {
		t.Errorf("a deleted notify still delivered: %v %v", first.received(), second.received())
	}
}

// A full queue drops new messages, counts them as failed and says so once per overflow.
func TestNotifyQueueIsBounded(t *testing.T) {
	storetest.Reset(t, testStore)
	if err := testStore.CreateACLToken(context.Background(), &acl.Token{ID: testAdminToken, Management: true, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c := NewNotifyController(testStore, Options{Logger: storetest.QuietLogger(), Caches: cachetest.Registry(t, testStore)})
	n := &v4.Notify{Metadata: v4.ObjectMeta{Name: "ops", Namespace: "ctl", Annotations: map[string]string{v4.NotifySubscriberAnnotation: "berth-acl-" + testAdminToken}},
		Spec: v4.NotifySpec{URL: "http://127.0.0.1:9/x"}}
	s := &sender{c: c, key: "ctl/ops", queue: make(chan v4.NotifyMessage, notifyQueueSize), notify: n} // no run loop: nothing drains
	msg := notifyMessage(n, v4.NotifyTaskGroupFailed, failedEvent("ctl", "0.web.ctl.c.1"))
	for range notifyQueueSize + 3 {
		s.enqueue(msg)
	}
	if len(s.queue) != notifyQueueSize || s.pending.failed != 3 || s.pending.lastFailure == nil ||
		!strings.Contains(s.pending.lastFailure.Error, "dropped") {
		t.Fatalf("queue %d, pending %+v", len(s.queue), s.pending)
	}
	storetest.FlushEvents(t, testStore)
	evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: "ctl", Kind: v4.KindNotify, Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Reason != "NotifyFailed" || !strings.Contains(evs[0].Message, "dropping messages") {
		t.Errorf("want one NotifyFailed about dropping, got %+v", evs)
	}
}

// An event seen twice (by the watch and by the list that catches up) is queued once;
// one from before the term not at all.
func TestNotifyHandlesAnEventOncePerTerm(t *testing.T) {
	c := NewNotifyController(testStore, Options{Logger: storetest.QuietLogger(), Caches: cachetest.Registry(t, testStore)})
	n := &v4.Notify{Metadata: v4.ObjectMeta{Name: "ops", Namespace: "ctl"}, Spec: v4.NotifySpec{URL: "http://127.0.0.1:9/x"}}
	s := &sender{c: c, key: "ctl/ops", queue: make(chan v4.NotifyMessage, notifyQueueSize), notify: n}
	c.senders[s.key] = s
	e := failedEvent("ctl", "0.web.ctl.c.1")
	e.Time = time.Now()
	c.handle(e)
	c.handle(e)
	old := failedEvent("ctl", "0.web.ctl.c.0")
	old.Time = c.started.Add(-time.Millisecond)
	c.handle(old)
	if len(s.queue) != 1 {
		t.Fatalf("queued %d messages, want 1", len(s.queue))
	}
	if m := <-s.queue; m.TaskGroup != "0.web.ctl.c.1" || m.ID != eventID(e) {
		t.Errorf("queued %+v", m)
	}
}
