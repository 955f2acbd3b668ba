package cli

import (
	"strings"
	"testing"
)

const notifyJSON = `{"apiVersion":"v4","kind":"notify","metadata":{"name":"ops","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:55:00Z"},
	"spec":{"url":"https://hooks.test/berth","events":["taskgroup.failed","node.lost"],"headers":{"Authorization":"Bearer hunter2"},"timeoutSeconds":10,"maxRetries":3},
	"status":{"delivered":7,"failed":1,
		"lastDelivery":{"time":"2026-11-22T11:59:00Z","event":"node.lost","subject":"node n1","attempts":2,"code":200},
		"lastFailure":{"time":"2026-11-22T11:58:00Z","event":"taskgroup.failed","subject":"process defaultGroup/web (0.web.defaultGroup.berth.1)","attempts":4,"code":500,"error":"HTTP 500"}}}`

func TestGetAndDescribeNotify(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/notifies", 200, `{"kind":"List","items":[`+notifyJSON+`]}`)
	api.json("GET /v1/namespaces/defaultGroup/notifies/ops", 200, notifyJSON)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)

	r := runCLIOK(t, url, "", "get", "notifies")
	want := dedent(`
		NAME   URL                       EVENTS                       DELIVERED   FAILED   AGE
		ops    https://hooks.test/berth  taskgroup.failed,node.lost   7           1        5m
		`)
	if strings.Join(strings.Fields(r.stdout), " ") != strings.Join(strings.Fields(want), " ") {
		t.Errorf("get notifies =\n%s\nwant\n%s", r.stdout, want)
	}

	r = runCLIOK(t, url, "", "describe", "notify", "ops")
	wantContains(t, r.stdout,
		"URL:              https://hooks.test/berth\n",
		"Events:           taskgroup.failed,node.lost\n",
		"Namespaces:       defaultGroup (its own)\n",
		"Headers:          Authorization\n",
		"Timeout:          10s, 3 retries\n",
		"Delivered:        7\n",
		"Last delivery:    node.lost about node n1, 2 attempt(s), HTTP 200 (60s ago)\n",
		"Last failure:     taskgroup.failed about process defaultGroup/web (0.web.defaultGroup.berth.1), 4 attempt(s): HTTP 500 (2m ago)\n",
	)
	if strings.Contains(r.stdout, "hunter2") {
		t.Error("a header value was printed")
	}
}
