package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/store/storetest"
)

// An agent records a Warning on a service of a load-balancer group (a port its node
// cannot listen on), which the service's owner sees among the service's events; not on a
// service outside every group, nor on another kind.
func TestAgentEventsOfLoadBalancerServices(t *testing.T) {
	url := newTestServer(t, Config{})
	svc := func(name, labels string) string {
		return `{"apiVersion":"v4","kind":"service","metadata":{"name":"` + name + `","namespace":"lbev","labels":{` + labels + `}},
			"spec":{"selector":{"app":"x"},"ports":[{"name":"p","protocol":"tcp","servicePort":5432}]}}`
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/lbev/services", svc("db", `"BCSGROUP":"g1"`)), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/lbev/services", svc("plain", "")), http.StatusCreated)
	post := func(body string) response {
		return callAs(t, "n1", http.MethodPost, url+"/v1/agent/nodes/n1/events", body, "")
	}
	ev := func(kind, name string) string {
		return `{"type":"Warning","reason":"LoadBalancerPortUnavailable","message":"load-balancer group g1 cannot listen on port 5432","kind":"` +
			kind + `","namespace":"lbev","name":"` + name + `"}`
	}
	wantStatus(t, post(ev("service", "db")), http.StatusAccepted)
	wantStatus(t, post(ev("service", "plain")), http.StatusForbidden)
	wantStatus(t, post(ev("service", "gone")), http.StatusNotFound)
	if r := post(ev("process", "db")); r.code != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), `"field":"kind"`) {
		t.Errorf("another kind: %d %s", r.code, r.body)
	}
	storetest.FlushEvents(t, testStore)
	body := string(call(t, http.MethodGet, url+"/v1/events?namespace=lbev&kind=service&name=db", "").body)
	if !strings.Contains(body, "LoadBalancerPortUnavailable") || !strings.Contains(body, `"node":"n1"`) {
		t.Errorf("the service's events: %s", body)
	}
}
