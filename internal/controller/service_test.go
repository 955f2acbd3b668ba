package controller

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// applyService creates or replaces service demo/web selecting selector.
func applyService(t *testing.T, selector string) {
	t.Helper()
	docs, err := v4.Parse([]byte(`{"apiVersion":"v4","kind":"service","metadata":{"name":"web","namespace":"demo"},
		"spec":{"selector":` + selector + `,"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

// getEndpoints reads demo/web's endpoints (nil when there are none).
func getEndpoints(t *testing.T) *v4.Endpoints {
	t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindEndpoint, "demo", "web")
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v4.Endpoints)
}

// putTG writes tg, creating it or replacing what is stored.
func putTG(t *testing.T, tg *v4.TaskGroup) {
	t.Helper()
	tg.TypeMeta = v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup}
	cur, err := testStore.Get(context.Background(), v4.KindTaskGroup, tg.Metadata.Namespace, tg.Metadata.Name)
	if errors.Is(err, store.ErrNotFound) {
		if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	tg.Metadata.ResourceVersion = cur.GetMeta().ResourceVersion
	if err := testStore.Update(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// The controller follows the instances of a service as they start, fail their health
// checks, go and come back, writes nothing while nothing changes, and removes the
// endpoints with the service.
func TestServiceControllerKeepsEndpoints(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.StartGrace = time.Millisecond // the empty service warns at once
		return NewServiceController(testStore, opts)
	})

	applyService(t, `{"app":"nothing"}`)
	e.eventually("empty endpoints", func() bool { ep := getEndpoints(t); return ep != nil && len(ep.Endpoints) == 0 })
	eventsEventually(t, "a NoEndpoints warning", v4.EventFilter{Kind: v4.KindService, Namespace: "demo", Name: "web"},
		func(evs []v4.Event) bool {
			for _, ev := range evs {
				if ev.Reason == "NoEndpoints" && ev.Type == v4.EventWarning {
					return true
				}
			}
			return false
		})

	applyService(t, `{"app":"web"}`)
	putTG(t, svcTG(0, nil))
	putTG(t, svcTG(1, func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusStarting }))
	putTG(t, svcTG(2, func(tg *v4.TaskGroup) { tg.Spec.Labels = map[string]string{"app": "api"} }))
	e.eventually("instance 0 ready, 1 not", func() bool {
		ep := getEndpoints(t)
		return ep != nil && len(ep.Endpoints) == 1 && ep.Endpoints[0].Target.Index == 0 &&
			len(ep.NotReady) == 1 && ep.NotReady[0].Reason == v4.StatusStarting
	})

	putTG(t, svcTG(1, nil))
	e.eventually("both ready", func() bool { ep := getEndpoints(t); return ep != nil && len(ep.Endpoints) == 2 })
	rv := getEndpoints(t).Metadata.ResourceVersion
	// A change that changes nothing of the endpoints writes nothing.
	putTG(t, svcTG(1, func(tg *v4.TaskGroup) { tg.Status.Message = "still running" }))

	putTG(t, svcTG(0, func(tg *v4.TaskGroup) {
		tg.Spec.Template.Spec.Containers[0].HealthChecks = []v4.HealthCheck{{Type: v4.CheckTCP}}
		tg.Status.Healthy = boolPtr(false)
	}))
	e.eventually("instance 0 failing its check", func() bool {
		ep := getEndpoints(t)
		return ep != nil && len(ep.Endpoints) == 1 && ep.Endpoints[0].Target.Index == 1 &&
			len(ep.NotReady) == 1 && ep.NotReady[0].Reason == "health check failing"
	})
	if got := endpointWrites(t, rv); got != 1 {
		t.Errorf("%d writes of the endpoints for one change that mattered, want 1", got)
	}

	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, "demo", svcTG(1, nil).Metadata.Name, ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("instance 1 gone", func() bool { ep := getEndpoints(t); return ep != nil && len(ep.Endpoints) == 0 })

	if _, err := testStore.Delete(context.Background(), v4.KindService, "demo", "web", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("the endpoints deleted with the service", func() bool { return getEndpoints(t) == nil })
}

// endpointWrites counts the versions of demo/web's endpoints written after revision rv.
func endpointWrites(t *testing.T, rv string) int {
	t.Helper()
	ep := getEndpoints(t)
	if ep == nil {
		t.Fatal("no endpoints")
	}
	from, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := testStore.Watch(ctx, v4.KindEndpoint, "demo", from+1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ev := range ch {
		n++
		if ev.Object.GetMeta().ResourceVersion == ep.Metadata.ResourceVersion {
			break
		}
	}
	return n
}

// ClusterIP services get a virtual IP of the range, kept across changes, none for type
// None; an exhausted range is a Warning event and no VIP; a deleted service's VIP is
// given back.
func TestServiceVIPs(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.ServiceCIDR = netip.MustParsePrefix("10.9.0.0/30")
		return NewServiceController(testStore, opts)
	})
	apply := func(name, typ string) {
		t.Helper()
		docs, err := v4.Parse([]byte(`{"apiVersion":"v4","kind":"service","metadata":{"name":"` + name + `","namespace":"demo"},
			"spec":{"type":"` + typ + `","selector":{"app":"web"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := testStore.Apply(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
	vipOf := func(name string) (string, bool) {
		o, err := testStore.Get(context.Background(), v4.KindEndpoint, "demo", name)
		if err != nil {
			return "", false
		}
		return o.(*v4.Endpoints).VIP, true
	}
	apply("a", "ClusterIP")
	apply("headless", "None")
	apply("b", "ClusterIP")
	var a, b string
	e.eventually("VIPs for a and b", func() bool {
		a, _ = vipOf("a")
		b, _ = vipOf("b")
		return a != "" && b != ""
	})
	if a == b || !netip.MustParsePrefix("10.9.0.0/30").Contains(netip.MustParseAddr(a)) {
		t.Fatalf("VIPs %s and %s", a, b)
	}
	if vip, ok := vipOf("headless"); !ok || vip != "" {
		t.Errorf("a service of type None: VIP %q (endpoints %v)", vip, ok)
	}
	putTG(t, svcTG(0, nil))
	e.eventually("a's endpoints to change", func() bool {
		o, err := testStore.Get(context.Background(), v4.KindEndpoint, "demo", "a")
		return err == nil && len(o.(*v4.Endpoints).Endpoints) == 1
	})
	if got, _ := vipOf("a"); got != a {
		t.Errorf("a's VIP moved from %s to %s", a, got)
	}

	apply("c", "ClusterIP") // the /30 has two
	eventsEventually(t, "a NoVIP warning", v4.EventFilter{Kind: v4.KindService, Namespace: "demo", Name: "c"}, func(evs []v4.Event) bool {
		for _, ev := range evs {
			if ev.Reason == "NoVIP" && strings.Contains(ev.Message, "--service-cidr") {
				return true
			}
		}
		return false
	})
	if _, err := testStore.Delete(context.Background(), v4.KindService, "demo", "a", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("c to get a's VIP", func() bool { vip, _ := vipOf("c"); return vip == a })
}
