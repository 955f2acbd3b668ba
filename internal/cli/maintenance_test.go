package cli

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestMoveDrainMaintenanceCommands(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/namespaces/demo/taskgroups/0.web.demo.berth.1/move", http.StatusAccepted,
		`{"object":{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.web.demo.berth.1","namespace":"demo"}},
		"operation":{"type":"move","kind":"process","name":"demo/web","message":"move instance 0 (0.web.demo.berth.1) from node-a to node node-b"},
		"watch":"/v1/namespaces/demo/taskgroups?name=0.web.demo.berth.1&watch=true"}`)
	api.json("POST /v1/nodes/node-a/drain", http.StatusAccepted,
		`{"object":{"apiVersion":"v4","kind":"node","metadata":{"name":"node-a"}},
		"operation":{"type":"drain","kind":"node","name":"node-a","message":"drain node node-a"},"watch":"/v1/nodes?name=node-a&watch=true"}`)
	api.stream("GET /v1/events",
		`{"type":"Normal","reason":"DrainMoving","kind":"node","name":"node-a","message":"moving 0.web.demo.berth.1 off node node-a; 0 more to move after it"}`,
		`{"type":"Normal","reason":"Drained","kind":"node","name":"node-a","message":"node node-a drained"}`)
	api.json("PUT /v1/engine", http.StatusOK, `{"maintenance":true,"reason":"etcd upgrade","since":"2026-11-22T12:00:00Z"}`)
	api.json("GET /v1/engine", http.StatusOK, `{"maintenance":false}`)

	tests := []struct {
		args    []string
		request string // the request made last (or the only one)
		body    string // a fragment of its body
		out     []string
	}{
		{[]string{"move", "0.web.demo.berth.1", "--to", "node-b", "-n", "demo"}, "POST /v1/namespaces/demo/taskgroups/0.web.demo.berth.1/move",
			`"node":"node-b"`, []string{"taskgroup/0.web.demo.berth.1: move instance 0", "watch: /v1/namespaces/demo/taskgroups"}},
		{[]string{"drain", "node-a", "--force"}, "POST /v1/nodes/node-a/drain?force=true", "", []string{"node/node-a: drain node node-a"}},
		{[]string{"drain", "node-a", "--wait"}, "POST /v1/nodes/node-a/drain", "", []string{"DrainMoving: moving 0.web", "node node-a drained"}},
		{[]string{"maintenance", "on", "--reason", "etcd upgrade"}, "PUT /v1/engine", `"reason":"etcd upgrade"`, []string{"maintenance: on since", "(reason: etcd upgrade)"}},
		{[]string{"maintenance", "status"}, "GET /v1/engine", "", []string{"maintenance: off"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			api.reset()
			res := runCLI(t, url, "", tc.args...)
			if res.err != nil {
				t.Fatalf("error %v; stdout %s", res.err, res.stdout)
			}
			if !slices.Contains(api.got(), tc.request) {
				t.Errorf("requests %v, want %s", api.got(), tc.request)
			}
			route, _, _ := strings.Cut(tc.request, "?")
			if !strings.Contains(api.body(route), tc.body) {
				t.Errorf("body %s, want %s in it", api.body(route), tc.body)
			}
			for _, want := range tc.out {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("output %q, want %q in it", res.stdout, want)
				}
			}
		})
	}
}

func TestMaintenanceRefusalIsPrinted(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/nodes/node-a/drain", http.StatusLocked,
		`{"error":{"code":423,"reason":"Locked","message":"berth is in maintenance mode since 2026-11-22 12:00:00 UTC (reason: etcd): writes are refused; turn it off with `+"`berth maintenance off`"+`"}}`)
	res := runCLI(t, url, "", "drain", "node-a")
	if res.err == nil || !strings.Contains(res.err.Error(), "maintenance mode") || !strings.Contains(res.err.Error(), "berth maintenance off") {
		t.Fatalf("error %v, want the server's message", res.err)
	}
}
