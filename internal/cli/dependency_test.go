package cli

import (
	"strings"
	"testing"
)

const cliDepJSON = `{"apiVersion":"v4","kind":"dependency",
	"metadata":{"name":"logagent","namespace":"infra","resourceVersion":"9","creationTimestamp":"2026-11-22T11:55:00Z"},
	"restartPolicy":{"policy":"Always"},"killPolicy":{"gracePeriod":3},
	"spec":{"template":{"spec":{"processes":[{"procName":"agent","startCmd":"./agent"}]}}},
	"status":{"message":"2 pods, 3 dependent task groups","pods":[
		{"node":"node-1","policy":"node","taskGroup":"0.logagent.infra.berth.1","phase":"Running","refCount":3},
		{"node":"node-1","policy":"namespace","scope":"shop","taskGroup":"1.logagent.infra.berth.2","phase":"Running","refCount":0,"lastUsed":"2026-11-22T11:58:00Z"}]}}`

func TestDescribeDependency(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/infra/dependencies/logagent", 200, cliDepJSON)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	api.json("GET /v1/namespaces/infra/taskgroups", 200, `{"kind":"TaskGroupList","items":[
		{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.logagent.infra.berth.1","namespace":"infra"},
		 "spec":{"owner":{"kind":"dependency","name":"logagent"},"index":0,"node":"node-1","template":{"spec":{}}},
		 "status":{"phase":"Running","tasks":[{"name":"agent","status":"Running","info":{"Pid":4242}}]}}]}`)
	r := runCLIOK(t, url, "", "describe", "dep", "logagent", "-n", "infra")
	wantContains(t, r.stdout,
		"Kind:             dependency\n",
		"Status:           2 pods, 3 dependent task groups\n",
		"Restart Policy:   Always",
		"NODE     SHARED BY        TASK GROUP                 PHASE     REFCOUNT   LAST USED\n",
		"node-1   node             0.logagent.infra.berth.1   Running   3          in use\n",
		"node-1   namespace shop   1.logagent.infra.berth.2   Running   0          2m ago\n",
		"0  0.logagent.infra.berth.1  Running on node-1\n",
		"agent, Running, pid 4242\n",
	)
}

func TestGetDependencies(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/infra/dependencies", 200, `{"kind":"DependencyList","items":[`+cliDepJSON+`]}`)
	r := runCLIOK(t, url, "", "get", "deps", "-n", "infra")
	if !strings.Contains(r.stdout, "PODS") || !strings.Contains(r.stdout, "2/2") || !strings.Contains(r.stdout, "logagent") {
		t.Errorf("get output:\n%s", r.stdout)
	}
}

func TestDeleteDependencyForce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"delete", "dep", "logagent", "-n", "infra"}, "DELETE /v1/namespaces/infra/dependencies/logagent"},
		{[]string{"delete", "dep", "logagent", "-n", "infra", "--force"}, "DELETE /v1/namespaces/infra/dependencies/logagent?force=true"},
	} {
		api, url := newFakeAPI(t)
		api.json("DELETE /v1/namespaces/infra/dependencies/logagent", 200, cliDepJSON)
		runCLIOK(t, url, "", tc.args...)
		if got := api.got(); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%v: requests %v, want %s", tc.args, got, tc.want)
		}
	}
}
