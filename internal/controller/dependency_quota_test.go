package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// A dependency's pods count against its namespace's quota: a node whose pod would pass
// it gets none, the status and a QuotaExceeded event say why (namespace, resource,
// usage, limit), and the pod starts once there is room (a raised quota, seen at the
// pass's next retry).
func TestDependencyPodsRespectQuota(t *testing.T) {
	bg := context.Background()
	setLimits := func(l quota.List) {
		t.Helper()
		if _, err := testStore.SetNamespaceLimits(bg, "infra", store.NamespaceLimits{Resources: l}); err != nil {
			t.Fatal(err)
		}
	}
	setLimits(quota.List{quota.Instances: 1})
	t.Cleanup(func() { _, _ = testStore.SetNamespaceLimits(bg, "infra", store.NamespaceLimits{}) })
	e := newDepEnv(t, time.Hour, "node-1", "node-2")
	e.applyDependency("./agent")
	e.addDependent("shop", "a", "node-1", v4.DependencyPolicyNode)
	e.eventually("a pod on node-1", func() bool { return len(e.depPods()) == 1 })
	e.addDependent("shop", "b", "node-2", v4.DependencyPolicyNode)
	const why = "namespace infra: instances quota exceeded: 1 used + 1 asked > 1"
	e.eventually("the reason in the status", func() bool { return strings.Contains(e.depStatus().Message, why) })
	if pods := e.depPods(); len(pods) != 1 || pods[0].Spec.Node != "node-1" {
		t.Fatalf("%d pods, want node-1's only", len(pods))
	}
	e.eventually("a QuotaExceeded event", func() bool {
		storetest.FlushEvents(t, testStore)
		evs, err := testStore.ListEvents(bg, v4.EventFilter{Namespace: "infra", Kind: v4.KindDependency, Name: "logagent"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Reason == ReasonQuotaExceeded && strings.Contains(ev.Message, why) {
				return true
			}
		}
		return false
	})

	setLimits(quota.List{quota.Instances: 2})
	e.eventually("node-2's pod once there is room", func() bool { return len(e.depPods()) == 2 })
	e.eventually("the status without the reason", func() bool { return !strings.Contains(e.depStatus().Message, "quota") })
}
