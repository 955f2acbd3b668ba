package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

// tenantPolicy grants what a tenant of one namespace has: everything but the cluster, in
// namespace ctl only.
func tenantPolicy(name string, namespaces ...string) *acl.Policy {
	return &acl.Policy{Kind: acl.KindPolicy, Metadata: acl.PolicyMeta{Name: name},
		Rules: []acl.Rule{{Namespaces: namespaces, Kinds: []string{"*"}, Verbs: []string{"read", "write", "logs", "exec", "scale"}}}}
}

// A notify subscribed to every namespace delivers only what its subscriber may read when
// each message is sent: a tenant's token gets its own namespace's events, not another's
// nor the nodes'; a token narrowed, revoked or expired since, or none recorded, gets
// nothing more (a NotifyFailed event says why when there is no working token); the
// management token gets everything. Dropped messages are counted by reason.
func TestNotifyDeliversOnlyWhatTheSubscriberMayRead(t *testing.T) {
	ctx := context.Background()
	put := func(t *testing.T, p *acl.Policy) {
		if err := testStore.PutACLPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	token := func(t *testing.T, id string, expires time.Time, policies ...string) {
		if err := testStore.CreateACLToken(ctx, &acl.Token{ID: id, Name: "tenant", Policies: policies, Created: time.Now(), Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name       string
		subscriber string
		setup      func(t *testing.T)
		after      func(t *testing.T) // once the notify exists: narrow or revoke
		want       []string           // namespaces delivered ("" for the node event)
		dropped    map[string]float64 // by reason
		failed     string             // in the NotifyFailed event
	}{
		{name: "management token", subscriber: "berth-acl-" + testAdminToken,
			want: []string{"", "ctl", "other"}},
		{name: "tenant of ctl", subscriber: "berth-acl-tnt001",
			setup: func(t *testing.T) { put(t, tenantPolicy("tenant", "ctl")); token(t, "tnt001", time.Time{}, "tenant") },
			want:  []string{"ctl"}, dropped: map[string]float64{dropForbidden: 2}},
		{name: "tenant narrowed since", subscriber: "berth-acl-tnt001",
			setup: func(t *testing.T) { put(t, tenantPolicy("tenant", "ctl")); token(t, "tnt001", time.Time{}, "tenant") },
			after: func(t *testing.T) { put(t, tenantPolicy("tenant", "elsewhere")) },
			want:  nil, dropped: map[string]float64{dropForbidden: 3}},
		{name: "token revoked since", subscriber: "berth-acl-tnt001",
			setup: func(t *testing.T) { put(t, tenantPolicy("tenant", "*")); token(t, "tnt001", time.Time{}, "tenant") },
			after: func(t *testing.T) {
				if err := testStore.DeleteACLToken(ctx, "tnt001"); err != nil {
					t.Fatal(err)
				}
			},
			want: nil, dropped: map[string]float64{dropNoSubscriber: 3}, failed: "token berth-acl-tnt001, is revoked"},
		{name: "token expired", subscriber: "berth-acl-tnt001",
			setup: func(t *testing.T) {
				put(t, tenantPolicy("tenant", "*"))
				token(t, "tnt001", time.Now().Add(-time.Second), "tenant")
			},
			want: nil, dropped: map[string]float64{dropNoSubscriber: 3}, failed: "expired"},
		{name: "no subscriber recorded", subscriber: "",
			want: nil, dropped: map[string]float64{dropNoSubscriber: 3}, failed: "names no subscriber"},
		{name: "a forged subscriber", subscriber: "root",
			want: nil, dropped: map[string]float64{dropNoSubscriber: 3}, failed: "names no subscriber"},
		{name: "anonymous, as its policy allows", subscriber: v4.NotifyAnonymous,
			setup: func(t *testing.T) { put(t, tenantPolicy(acl.AnonymousPolicy, "other")) },
			want:  []string{"other"}, dropped: map[string]float64{dropForbidden: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newNotifyEnv(t)
			e.subscriber = tc.subscriber
			if tc.setup != nil {
				tc.setup(t)
			}
			cb := newCallbacks(t)
			e.notify("wide", cb.srv.URL, func(s *v4.NotifySpec) { s.Namespaces = []string{v4.NotifyAllNamespaces} })
			if tc.after != nil {
				tc.after(t)
				time.Sleep(subscriberTTL + 100*time.Millisecond) // what the controller read of the token ages out
			}
			e.record(failedEvent("ctl", "0.web.ctl.c.1"))
			e.record(failedEvent("other", "0.web.other.c.1"))
			e.record(v4.Event{Type: v4.EventWarning, Reason: "NodeLost", Kind: v4.KindNode, Name: "node-1", Message: "node node-1 is Lost"})
			dropped := func(reason string) float64 {
				return testutil.ToFloat64(e.c.metrics.notifyUnsent.WithLabelValues(reason))
			}
			e.eventually("every message sent or dropped", func() bool {
				return float64(len(cb.received()))+dropped(dropForbidden)+dropped(dropNoSubscriber) >= 3
			})
			time.Sleep(100 * time.Millisecond) // let anything wrongly sent arrive too
			var got []string
			for _, m := range cb.received() {
				got = append(got, m.Namespace)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("delivered about namespaces %q, want %q", got, tc.want)
			}
			for _, reason := range []string{dropForbidden, dropNoSubscriber, dropUnchecked} {
				if got := dropped(reason); got != tc.dropped[reason] {
					t.Errorf("dropped for %s: %g, want %g", reason, got, tc.dropped[reason])
				}
			}
			fails := e.failures("wide")
			if tc.failed == "" && len(fails) > 0 || tc.failed != "" && (len(fails) != 1 || !strings.Contains(fails[0], tc.failed)) {
				t.Errorf("NotifyFailed events %q, want one saying %q", fails, tc.failed)
			}
			for _, f := range fails {
				if strings.Contains(f, "other") || strings.Contains(f, "node-1") {
					t.Errorf("a NotifyFailed event names what the subscriber may not read: %s", f)
				}
			}
			if st := e.notifyStatus("wide"); st.Failed != 0 || st.LastFailure != nil {
				t.Errorf("dropped messages reached the notify's status: %+v", st)
			}
		})
	}
}

// The rights each message needs: a task group event's namespace, or the nodes.
func TestReadsFor(t *testing.T) {
	cases := []struct {
		m    v4.NotifyMessage
		want string
	}{
		{v4.NotifyMessage{Namespace: "web", Kind: v4.KindProcess}, "read task group in namespace web, read event in namespace web"},
		{v4.NotifyMessage{Kind: v4.KindNode, Name: "n1"}, "read node"},
	}
	for _, tc := range cases {
		var got []string
		for _, r := range readsFor(tc.m) {
			got = append(got, r.String())
		}
		if strings.Join(got, ", ") != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.want)
		}
	}
}

// A full queue says so in the notify's status and events, which its subscriber reads:
// an overflowing message the subscriber may not receive is dropped without a word.
func TestNotifyOverflowNamesOnlyWhatTheSubscriberMayRead(t *testing.T) {
	e := newNotifyEnv(t)
	ctx := context.Background()
	if err := testStore.PutACLPolicy(ctx, tenantPolicy("tenant", "ctl")); err != nil {
		t.Fatal(err)
	}
	if err := testStore.CreateACLToken(ctx, &acl.Token{ID: "tnt001", Policies: []string{"tenant"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n := &v4.Notify{Metadata: v4.ObjectMeta{Name: "wide", Namespace: "ctl", Annotations: map[string]string{v4.NotifySubscriberAnnotation: "berth-acl-tnt001"}},
		Spec: v4.NotifySpec{URL: "http://127.0.0.1:9/x", Namespaces: []string{"*"}}}
	s := &sender{c: e.c, key: "ctl/wide", queue: make(chan v4.NotifyMessage, 1), notify: n} // no run loop: nothing drains
	s.enqueue(notifyMessage(n, v4.NotifyTaskGroupFailed, failedEvent("ctl", "0.web.ctl.c.1")))
	s.enqueue(notifyMessage(n, v4.NotifyTaskGroupFailed, failedEvent("other", "0.web.other.c.1")))
	if s.pending.failed != 0 || s.pending.lastFailure != nil {
		t.Fatalf("an unreadable message reached the status: %+v", s.pending)
	}
	if got := testutil.ToFloat64(e.c.metrics.notifyUnsent.WithLabelValues(dropForbidden)); got != 1 {
		t.Fatalf("dropped for forbidden: %g, want 1", got)
	}
	s.enqueue(notifyMessage(n, v4.NotifyTaskGroupFailed, failedEvent("ctl", "0.web.ctl.c.2")))
	if s.pending.failed != 1 || !strings.Contains(s.pending.lastFailure.Subject, "0.web.ctl.c.2") {
		t.Fatalf("a readable overflow: %+v", s.pending)
	}
}
