package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
)

// A daemonset does not grow past its namespace's quota as nodes join: a node whose
// instance would pass it gets none and is not counted, the status and a QuotaExceeded
// event say why (namespace, resource, usage, limit), and the instance is placed once
// there is room (here a raised quota, seen at the pass's next retry).
func TestDaemonsetRespectsQuota(t *testing.T) {
	setQuota(t, quota.List{quota.Instances: 2})
	e := newDSEnv(t, "n1")
	e.applyDS("./agent", "")
	e.eventually("an instance on n1", func() bool { return len(e.onNodes()) == 1 && e.dsStatus().Desired == 1 })
	e.node("n2")
	e.node("n3")
	const why = "namespace ctl: instances quota exceeded: 2 used + 1 asked > 2"
	e.eventually("the reason in the status", func() bool { return strings.Contains(e.dsStatus().Message, why) })
	if got := e.nodesWith(anyTG); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("instances on %v, want n1 and n2 only", got)
	}
	if st := e.dsStatus(); st.Desired != 2 || !strings.Contains(st.Message, "1 node(s) wait for room in the namespace's quota ([n3])") {
		t.Errorf("status %+v: want 2 desired and n3 named as waiting", st)
	}
	e.eventually("a QuotaExceeded event", func() bool { return contains(e.reasons(v4.KindDaemonset, "agent"), ReasonQuotaExceeded) })

	setQuota(t, quota.List{quota.Instances: 3})
	e.eventually("an instance on n3 once there is room", func() bool { return len(e.onNodes()) == 3 })
	e.eventually("the status without the reason", func() bool {
		st := e.dsStatus()
		return st.Desired == 3 && !strings.Contains(st.Message, "quota")
	})
}

// A restart of an instance on a node already counted never waits for the quota, even
// with the namespace at its quota: the quota charges it already.
func TestDaemonsetRestartAtQuota(t *testing.T) {
	setQuota(t, quota.List{quota.Instances: 1})
	e := newDSEnv(t, "n1")
	e.applyDS("./agent", "") // restarts Always, at once
	e.eventually("an instance on n1", func() bool { return len(e.onNodes()) == 1 })
	e.runAll()
	first := e.onNodes()["n1"]
	e.report(first, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("a replacement on n1", func() bool {
		tg := e.onNodes()["n1"]
		return tg != nil && tg.Metadata.Name != first.Metadata.Name
	})
	if st := e.dsStatus(); strings.Contains(st.Message, "quota") {
		t.Errorf("a restart waited for the quota: %q", st.Message)
	}
}
