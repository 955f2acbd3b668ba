package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/deployd"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// deployd's pod group hello.web.web with one running instance, number 2.
func deploydInstance(t *testing.T, url string) {
	t.Helper()
	wantDeployd(t, deploydCall(t, "POST", url+"/api/depends", deploydDependency, nil), http.StatusAccepted, "")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/podgroups", deploydPodGroup, nil), http.StatusAccepted, "")
	d := getDeployment(t, "hello", "hello-web-web")
	putTaskGroup(t, "hello", "1.hello-web-web-v1.hello.c.2", "node-1", func(tg *v4.TaskGroup) {
		tg.Spec.Owner, tg.Spec.Index = v4.OwnerRef{Kind: v4.KindApplication, Name: "hello-web-web-v1"}, 1
		tg.Spec.Template.Spec = d.Spec.Template.Spec
		tg.Status = v4.TaskGroupStatus{Phase: v4.StatusRunning}
	})
}

// An instance's container status history: its task group's phase events, oldest first,
// named as the docker events deployd kept; the same policies as the other routes.
func TestDeploydStatusHistory(t *testing.T) {
	url := newTestServer(t, Config{})
	deploydInstance(t, url)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, phase := range []string{v4.StatusStarting, v4.StatusRunning, v4.StatusFailed, v4.StatusRunning} {
		testStore.QueueEvent(v4.Event{Time: start.Add(time.Duration(i) * time.Minute), Type: v4.EventNormal, Reason: phase,
			Kind: v4.KindTaskGroup, Namespace: "hello", Name: "1.hello-web-web-v1.hello.c.2", Message: "phase " + phase + " " + string(rune('a'+i))})
	}
	storetest.FlushEvents(t, testStore)

	var hist []deployd.StatusMessage
	wantDeployd(t, deploydCall(t, "GET", url+"/api/cntstatushistory?name=hello.web.web&instance=2", "", &hist), http.StatusOK, "")
	want := []string{"starting", "start", "die", "start"}
	if len(hist) != len(want) {
		t.Fatalf("history %+v, want %v", hist, want)
	}
	for i, m := range hist {
		if m.Status != want[i] || m.Action != want[i] || m.From != "training/webapp" || m.Time != start.Add(time.Duration(i)*time.Minute).Unix() {
			t.Errorf("entry %d: %+v, want %s", i, m, want[i])
		}
	}
	wantDeployd(t, deploydCall(t, "GET", url+"/api/cntstatushistory?name=hello.web.web&instance=1", "", nil), http.StatusOK, "[]")
	wantDeployd(t, deploydCall(t, "GET", url+"/api/cntstatushistory?instance=1", "", nil), http.StatusBadRequest, "name")
	wantDeployd(t, deploydCall(t, "GET", url+"/api/cntstatushistory?name=hello.web.web", "", nil), http.StatusBadRequest, "instance")
	wantDeployd(t, deploydCall(t, "GET", url+"/api/cntstatushistory?name=hello.web.web&instance=0", "", nil), http.StatusBadRequest, "instance")
	wantDeployd(t, deploydCall(t, "GET", url+"/api/cntstatushistory?name=nothing.web.web&instance=1", "", nil), http.StatusNotFound, "")

	// A token of another namespace reads no history of hello's.
	other := otherNamespaceToken(t, url)
	if r := callAs(t, "", http.MethodGet, url+"/api/cntstatushistory?name=hello.web.web&instance=2", "", other); r.code != http.StatusForbidden {
		t.Errorf("another namespace's token: %d %s", r.code, r.body)
	}
}

// cmd=operation: restart of every instance rolls the deployment (a new template stamp),
// of one instance moves it (start and stop: compat_deployd_operation_test.go); the same
// policies as the other routes.
func TestDeploydOperation(t *testing.T) {
	url := newTestServer(t, Config{})
	createNode(t, "node-1")
	createNode(t, "node-2")
	deploydInstance(t, url)
	pg := url + "/api/podgroups?name=hello.web.web&cmd=operation"
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=restart", "", nil), http.StatusAccepted, `"check_url":"/api/podgroups?name=hello.web.web"`)
	if d := getDeployment(t, "hello", "hello-web-web"); d.Spec.Template.Metadata == nil || d.Spec.Template.Metadata.Annotations[deployd.RestartedAnnotation] == "" {
		t.Fatalf("restart of every instance must stamp the template: %+v", d.Spec.Template.Metadata)
	}
	// Instance 2 runs on node-1 for the deployment's application, which the controller
	// (not running here) would have written.
	d := getDeployment(t, "hello", "hello-web-web")
	app := &v4.Application{Workload: v4.Workload{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindApplication},
		Metadata: v4.ObjectMeta{Namespace: "hello", Name: "hello-web-web-v1"}, Spec: v4.WorkloadSpec{Instance: 2, Template: *d.Spec.Template}}}
	if err := testStore.Create(t.Context(), app, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) { // the scheduler's view follows the store
		r := deploydCall(t, "PATCH", pg+"&optype=restart&instance=2", "", nil)
		if r.code == http.StatusAccepted && strings.Contains(string(r.body), "instance 2 restarting") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart of instance 2: %d %s", r.code, r.body)
		}
	}
	if tg := getTaskGroup(t, "hello", "1.hello-web-web-v1.hello.c.2"); tg.Metadata.Annotations["berth.io/move-to"] == "" {
		t.Fatalf("restart of instance 2 must move it: %+v", tg.Metadata.Annotations)
	}
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=restart&instance=1", "", nil), http.StatusNotFound, "no running instance 1")
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=restart&instance=3", "", nil), http.StatusBadRequest, "instance")
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=restart&instance=-1", "", nil), http.StatusBadRequest, "instance")
	wantDeployd(t, deploydCall(t, "PATCH", pg+"&optype=pause", "", nil), http.StatusBadRequest, "optype")

	other := otherNamespaceToken(t, url)
	before := getDeployment(t, "hello", "hello-web-web").Spec.Template.Metadata.Annotations[deployd.RestartedAnnotation]
	for _, q := range []string{"&optype=restart", "&optype=restart&instance=2"} {
		if r := callAs(t, "", http.MethodPatch, pg+q, "", other); r.code != http.StatusForbidden {
			t.Errorf("another namespace's token, %s: %d %s", q, r.code, r.body)
		}
	}
	if after := getDeployment(t, "hello", "hello-web-web").Spec.Template.Metadata.Annotations[deployd.RestartedAnnotation]; after != before {
		t.Errorf("a refused restart changed the template: %s -> %s", before, after)
	}
}

// otherNamespaceToken is a token that may read and write everything in namespace
// "other" only: an attacker for the deployd routes' objects.
func otherNamespaceToken(t *testing.T, url string) string {
	t.Helper()
	return tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: other}
rules:
  - namespaces: [other]
    kinds: ["*"]
    verbs: [read, write]
`, "other", "")
}
