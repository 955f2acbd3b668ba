package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/berthhq/berth/internal/compat/deployd"
)

// cmd=operation's stop and start: one instance (deployd's numbers from 1) or every one
// (instance=0), kept in the deployment's spec.stoppedInstances; the pod's TargetState
// says Stop; a restart of a stopped instance starts it; another namespace's token and a
// read-only one change nothing.
func TestDeploydStopStart(t *testing.T) {
	url := newTestServer(t, Config{})
	deploydInstance(t, url) // instance 2 runs
	pg := url + "/api/podgroups?name=hello.web.web&cmd=operation"
	stopped := func() []int { return getDeployment(t, "hello", "hello-web-web").Spec.StoppedInstances }

	for range 2 { // idempotent
		wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=stop&instance=2", "", nil), http.StatusAccepted, `"message":"podgroup instance 2 stopping"`)
	}
	if got := stopped(); !slices.Equal(got, []int{1}) {
		t.Fatalf("stoppedInstances %v after stopping instance 2, want [1]", got)
	}
	var got deployd.PodGroupWithSpec
	wantDeployd(t, deploydCall(t, "GET", url+"/api/podgroups?name=hello.web.web", "", &got), http.StatusOK, "")
	if len(got.Pods) != 1 || got.Pods[0].InstanceNo != 2 || got.Pods[0].TargetState != 1 {
		t.Fatalf("pods %+v, want instance 2 with TargetState 1 (Stop)", got.Pods)
	}
	other := otherNamespaceToken(t, url)
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	for _, q := range []string{"&optype=start&instance=2", "&optype=stop", "&optype=start"} {
		for _, token := range []string{other, ro} {
			if r := callAs(t, "", http.MethodPatch, pg+q, "", token); r.code != http.StatusForbidden {
				t.Errorf("%s with a token that may not write hello: %d %s", q, r.code, r.body)
			}
		}
	}
	if got := stopped(); !slices.Equal(got, []int{1}) {
		t.Fatalf("a refused operation changed stoppedInstances to %v", got)
	}

	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=restart&instance=2", "", nil), http.StatusAccepted, "instance 2 starting")
	if got := stopped(); len(got) != 0 {
		t.Fatalf("stoppedInstances %v after restarting the stopped instance", got)
	}
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=stop&instance=0", "", nil), http.StatusAccepted, `"message":"podgroup stopping"`)
	if got := stopped(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("stoppedInstances %v after stopping every instance", got)
	}
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=start", "", nil), http.StatusAccepted, `"message":"podgroup starting"`)
	if got := stopped(); len(got) != 0 {
		t.Fatalf("stoppedInstances %v after starting every instance", got)
	}
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=stop&instance=1", "", nil), http.StatusAccepted, "instance 1 stopping")
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=restart", "", nil), http.StatusAccepted, "podgroup restarting")
	if got := stopped(); len(got) != 0 {
		t.Fatalf("stoppedInstances %v after restarting every instance: deployd's restart ran them all", got)
	}
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=stop&instance=3", "", nil), http.StatusBadRequest, "instance")
}
