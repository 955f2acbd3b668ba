package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

func deployJSON(ns, name, env string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"deployment","metadata":{"name":%q,"namespace":%q},
		"spec":{"instance":3,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","env":[{"name":"V","value":%q}]}]}}}}`,
		name, ns, env)
}

func getDeployment(t *testing.T, ns, name string) *v4.Deployment {
	t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindDeployment, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v4.Deployment)
}

// setHistory writes a status as the deployment controller would: revision 1 (env "one")
// and revision 2 (the current template), suspended.
func setHistory(t *testing.T, ns, name string) v4.PodTemplate {
	t.Helper()
	d := getDeployment(t, ns, name)
	one := *d.Spec.Template
	one.Spec.Processes = append([]v4.ProcessTask(nil), one.Spec.Processes...)
	one.Spec.Processes[0].Env = []v4.EnvVar{{Name: "V", Value: "one"}}
	d.Status = v4.DeploymentStatus{Phase: v4.DeploymentUpdateSuspend, Revision: 2, History: []v4.DeploymentRevision{
		{Revision: 1, Hash: v4.TemplateHash(&one), Template: one},
		{Revision: 2, Hash: v4.TemplateHash(d.Spec.Template), Template: *d.Spec.Template},
	}}
	if err := testStore.Update(context.Background(), d, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	return one
}

// serveDeployment starts a test server holding the deployment ops/web of deployJSON with
// env, and returns the server's URL and that of ops's deployments.
func serveDeployment(t *testing.T, env string) (base, deps string) {
	t.Helper()
	base = newTestServer(t, Config{})
	deps = base + "/v1/namespaces/ops/deployments"
	wantStatus(t, call(t, http.MethodPost, deps, deployJSON("ops", "web", env)), http.StatusCreated)
	return base, deps
}

func accepted(t *testing.T, r response) v4.Accepted {
	t.Helper()
	wantStatus(t, r, http.StatusAccepted)
	var acc v4.Accepted
	if err := json.Unmarshal(r.body, &acc); err != nil {
		t.Fatal(err)
	}
	return acc
}

func TestRolloutPauseResumeUndoAndHistory(t *testing.T) {
	_, deps := serveDeployment(t, "two")
	ctx := context.Background()

	// Without history there is nothing to go back to.
	r := call(t, http.MethodPost, deps+"/web/rollout/undo", "")
	wantStatus(t, r, http.StatusBadRequest)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "revision" {
		t.Errorf("undo without history: %+v", e)
	}
	h := call(t, http.MethodGet, deps+"/web/history", "")
	wantStatus(t, h, http.StatusOK)
	if !strings.Contains(string(h.body), `"items":[]`) {
		t.Errorf("empty history: %s", h.body)
	}

	one := setHistory(t, "ops", "web")
	acc := accepted(t, call(t, http.MethodPost, deps+"/web/rollout/pause", ""))
	if d := getDeployment(t, "ops", "web"); !d.Status.Paused || acc.Watch != "/v1/namespaces/ops/deployments?name=web&watch=true" {
		t.Errorf("pause: status %+v, watch %q", d.Status, acc.Watch)
	}
	// A user's update keeps what berth wrote in the status.
	wantStatus(t, call(t, http.MethodPut, deps+"/web", deployJSON("ops", "web", "two")), http.StatusOK)
	if d := getDeployment(t, "ops", "web"); !d.Status.Paused || d.Status.Revision != 2 {
		t.Errorf("status after a PUT: %+v", d.Status)
	}
	accepted(t, call(t, http.MethodPost, deps+"/web/rollout/resume", ""))
	if d := getDeployment(t, "ops", "web"); d.Status.Paused || d.Status.Phase != v4.DeploymentUpdating || time.Since(d.Status.LastStep) > time.Minute {
		t.Errorf("resume: status %+v", d.Status)
	}

	// A rollout in progress: scale waits (423), undo replaces it.
	if err := testStore.BeginOperation(ctx, "ops", "web", v4.Operation{Type: v4.OpRollout, Kind: v4.KindDeployment, Name: "ops/web"}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, call(t, http.MethodPost, deps+"/web/scale", `{"instances": 5}`), http.StatusLocked)
	for _, bad := range []struct {
		path string
		code int
	}{
		{"/web/rollout/undo?revision=x", http.StatusBadRequest},
		{"/web/rollout/undo?revision=7", http.StatusBadRequest},
		{"/web/rollout/undo?revision=2", http.StatusBadRequest}, // the current template already
		{"/web/rollout/pause?revision=1", http.StatusBadRequest},
		{"/web/rollout/restart", http.StatusNotFound},
		{"/nope/rollout/pause", http.StatusNotFound},
	} {
		wantStatus(t, call(t, http.MethodPost, deps+bad.path, ""), bad.code)
	}
	acc = accepted(t, call(t, http.MethodPost, deps+"/web/rollout/undo", ""))
	if acc.Operation == nil || acc.Operation.Type != v4.OpUndo || !strings.Contains(acc.Operation.Message, "revision 1") {
		t.Errorf("undo operation %+v", acc.Operation)
	}
	d := getDeployment(t, "ops", "web")
	if v4.TemplateHash(d.Spec.Template) != v4.TemplateHash(&one) || d.Status.Phase != v4.DeploymentUpdating {
		t.Errorf("after undo: template %+v, status %+v", d.Spec.Template, d.Status)
	}
	if op, _ := testStore.Operation(ctx, v4.KindDeployment, "ops", "web"); op == nil || op.Type != v4.OpUndo {
		t.Errorf("operation in progress %+v", op)
	}

	h = call(t, http.MethodGet, deps+"/web/history", "")
	wantStatus(t, h, http.StatusOK)
	var hist v4.DeploymentHistory
	if err := json.Unmarshal(h.body, &hist); err != nil || hist.Current != 2 || len(hist.Items) != 2 || hist.Items[0].Revision != 1 {
		t.Errorf("history %s (%v)", h.body, err)
	}
	wantStatus(t, call(t, http.MethodGet, deps+"/nope/history", ""), http.StatusNotFound)
}

func TestDeploymentUpdateThatChangesTheTemplateIsARollout(t *testing.T) {
	_, deps := serveDeployment(t, "one")
	wantStatus(t, call(t, http.MethodPut, deps+"/web", deployJSON("ops", "web", "one")), http.StatusOK)

	acc := accepted(t, call(t, http.MethodPut, deps+"/web", deployJSON("ops", "web", "two")))
	if acc.Operation == nil || acc.Operation.Type != v4.OpRollout || acc.Watch != "/v1/namespaces/ops/deployments?name=web&watch=true" {
		t.Fatalf("update with a new template: %+v", acc)
	}
	var d v4.Deployment
	if err := json.Unmarshal(acc.Object, &d); err != nil || !strings.Contains(string(acc.Object), "two") {
		t.Fatalf("object in the answer: %s (%v)", acc.Object, err)
	}
	wantStatus(t, call(t, http.MethodPost, deps+"/web/scale", `{"instances": 5}`), http.StatusLocked)
	// A newer template replaces the rollout in progress.
	accepted(t, call(t, http.MethodPut, deps+"/web", deployJSON("ops", "web", "three")))
	if op, _ := testStore.Operation(context.Background(), v4.KindDeployment, "ops", "web"); op == nil || op.Type != v4.OpRollout {
		t.Fatalf("operation in progress %+v", op)
	}
	// A refused write begins nothing new and changes nothing.
	wantStatus(t, call(t, http.MethodPut, deps+"/web", strings.Replace(deployJSON("ops", "web", "four"), `"instance"`, `"instances"`, 1)), http.StatusUnprocessableEntity)
	if d := getDeployment(t, "ops", "web"); !strings.Contains(string(mustJSON(t, d.Spec.Template)), "three") {
		t.Fatalf("template after a refused write: %+v", d.Spec.Template)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An undo writes a template: one that asks for a privilege (an administrator's earlier
// revision, root) is restored only by a requester holding it, and a token that may roll
// out without it gets the 403 naming the field.
func TestUndoToAPrivilegedRevisionNeedsThePrivilege(t *testing.T) {
	base, deps := serveDeployment(t, "two")
	d := getDeployment(t, "ops", "web")
	rooted := *d.Spec.Template
	rooted.Spec.Processes = append([]v4.ProcessTask(nil), rooted.Spec.Processes...)
	rooted.Spec.Processes[0].User = "root"
	d.Status = v4.DeploymentStatus{Phase: v4.DeploymentUpdateSuspend, Revision: 2, History: []v4.DeploymentRevision{
		{Revision: 1, Hash: v4.TemplateHash(&rooted), Template: rooted},
		{Revision: 2, Hash: v4.TemplateHash(d.Spec.Template), Template: *d.Spec.Template},
	}}
	if err := testStore.Update(context.Background(), d, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	deployer := tokenWithPolicy(t, base, `kind: acl-policy
metadata: {name: deployer}
rules:
  - {namespaces: [ops], kinds: ["*"], verbs: [read, write]}
`, "deployer", "")
	r := callAs(t, "", http.MethodPost, deps+"/web/rollout/undo", "", deployer)
	wantStatus(t, r, http.StatusForbidden)
	if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != "spec.template.spec.processes[0].user" {
		t.Fatalf("undo to a root revision: %s", r.body)
	}
	if got := getDeployment(t, "ops", "web"); got.Spec.Template.Spec.Processes[0].User != "" {
		t.Fatal("the refused undo changed the template")
	}
	accepted(t, call(t, http.MethodPost, deps+"/web/rollout/undo", "")) // the management token holds it
}
