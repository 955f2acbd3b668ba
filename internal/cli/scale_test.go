package cli

import (
	"encoding/json"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// berth scale sends the count, 0 included, and prints the operation; what is not a
// count of 0 or more is refused before any request.
func TestScaleCommand(t *testing.T) {
	api, url := newFakeAPI(t)
	const procs = "/v1/namespaces/defaultGroup/processes/web/scale"
	const deps = "/v1/namespaces/demo/deployments/api/scale"
	api.json("POST "+procs, 202, `{"object":{},"operation":{"type":"scale","kind":"process","name":"defaultGroup/web","message":"scale from 3 to 0"},"watch":"/v1/namespaces/defaultGroup/processes?name=web&watch=true"}`)
	api.json("POST "+deps, 202, `{"object":{},"operation":{"type":"scale","kind":"deployment","name":"demo/api","message":"scale from 0 to 2"},"watch":"/v1/namespaces/demo/deployments?name=api&watch=true"}`)
	for _, tc := range []struct {
		args       []string
		route, out string
		instances  int
	}{
		{[]string{"scale", "process", "web", "0"}, "POST " + procs, "process/web: scale from 3 to 0 (watch: /v1/namespaces/defaultGroup/processes?name=web&watch=true)\n", 0},
		{[]string{"scale", "deployment", "api", "2", "-n", "demo"}, "POST " + deps, "deployment/api: scale from 0 to 2 (watch: /v1/namespaces/demo/deployments?name=api&watch=true)\n", 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runCLIOK(t, url, "", tc.args...)
			if r.stdout != tc.out {
				t.Errorf("printed %q, want %q", r.stdout, tc.out)
			}
			var body map[string]int
			if err := json.Unmarshal([]byte(api.body(tc.route)), &body); err != nil || len(body) != 1 || body["instances"] != tc.instances {
				t.Errorf("body %s (%v), want instances %d", api.body(tc.route), err, tc.instances)
			}
		})
	}
	api.reset()
	for _, n := range []string{"-1", "two", "1.5", ""} {
		r := runCLI(t, url, "", "scale", "process", "web", "--", n) // "--": -1 is a count here, not a flag
		if r.err == nil || !strings.Contains(r.err.Error(), "0 or more") {
			t.Errorf("INSTANCES %q: %v", n, r.err)
		}
	}
	if got := api.got(); len(got) != 0 {
		t.Errorf("refused counts sent requests: %v", got)
	}
}

// A deployment at 0 has finished its rollout once it is Stopped (nothing left to run),
// not while it is Stopping.
func TestRolloutDoneAtZero(t *testing.T) {
	var d v4.Deployment
	if err := json.Unmarshal([]byte(deployDoc("", 0, 0, 0, 0, "")), &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Instance = 0
	for _, tc := range []struct {
		phase string
		old   int
		done  bool
	}{
		{v4.DeploymentStopped, 0, true},
		{v4.DeploymentStopping, 0, false},
		{v4.DeploymentStopped, 2, false},
		{v4.DeploymentUpdating, 0, false},
	} {
		d.Status.Phase, d.Status.Old = tc.phase, tc.old
		if got := rolloutDone(&d); got != tc.done {
			t.Errorf("%s with %d old: done %v, want %v", tc.phase, tc.old, got, tc.done)
		}
	}
}

// berth stop and start post to the instance's route and print what it does; what is not
// an index or all, or a kind without numbered instances, is refused before any request.
func TestStopStartCommands(t *testing.T) {
	api, url := newFakeAPI(t)
	const stop = "/v1/namespaces/defaultGroup/processes/web/instances/1/stop"
	const startAll = "/v1/namespaces/demo/deployments/api/instances/all/start"
	api.json("POST "+stop, 202, `{"object":{},"watch":"/v1/namespaces/defaultGroup/processes?name=web&watch=true"}`)
	api.json("POST "+startAll, 202, `{"object":{},"watch":"/v1/namespaces/demo/deployments?name=api&watch=true"}`)
	r := runCLIOK(t, url, "", "stop", "process", "web", "1")
	if want := "process/web: instance 1 stopping (watch: /v1/namespaces/defaultGroup/processes?name=web&watch=true)\n"; r.stdout != want {
		t.Errorf("printed %q, want %q", r.stdout, want)
	}
	r = runCLIOK(t, url, "", "start", "deployment", "api", "all", "-n", "demo")
	if want := "deployment/api: every instance starting (watch: /v1/namespaces/demo/deployments?name=api&watch=true)\n"; r.stdout != want {
		t.Errorf("printed %q, want %q", r.stdout, want)
	}
	api.reset()
	for _, args := range [][]string{{"stop", "process", "web", "--", "-1"}, {"start", "process", "web", "one"}, {"stop", "daemonset", "ds", "0"}} {
		if r := runCLI(t, url, "", args...); r.err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if got := api.got(); len(got) != 0 {
		t.Errorf("refused commands sent requests: %v", got)
	}
}
