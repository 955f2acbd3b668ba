package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/store/storetest"
)

func TestAgentEvents(t *testing.T) {
	url := newTestServer(t, Config{})
	post := func(node, body string) response {
		return callAs(t, "n1", http.MethodPost, url+"/v1/agent/nodes/"+node+"/events", body, "")
	}
	cases := []struct {
		name, node, body string
		code             int
		want             string
	}{
		{"warning", "n1", `{"type":"Warning","reason":"LoadBalancerConfigRefused","message":"group g1: haproxy -c failed"}`, http.StatusAccepted, ""},
		{"type", "n1", `{"type":"Fatal","reason":"X","message":"m"}`, http.StatusUnprocessableEntity, `"field":"type"`},
		{"reason", "n1", `{"type":"Normal","reason":"not a word","message":"m"}`, http.StatusUnprocessableEntity, `"field":"reason"`},
		{"message", "n1", `{"type":"Normal","reason":"X","message":"` + strings.Repeat("m", 5000) + `"}`, http.StatusUnprocessableEntity, `"field":"message"`},
		{"unknown field", "n1", `{"type":"Normal","reason":"X","message":"m","node":"n2"}`, http.StatusBadRequest, "unknown field"},
		{"another node", "n2", `{"type":"Normal","reason":"X","message":"m"}`, http.StatusForbidden, ""},
	}
	for _, c := range cases {
		r := post(c.node, c.body)
		if r.code != c.code || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, r.code, r.body, c.code, c.want)
		}
	}
	storetest.FlushEvents(t, testStore)
	body := string(call(t, http.MethodGet, url+"/v1/events?kind=node", "").body)
	if !strings.Contains(body, "haproxy -c failed") || !strings.Contains(body, `"name":"n1"`) || strings.Count(body, `"reason"`) != 1 {
		t.Errorf("node events: %s", body)
	}
}
