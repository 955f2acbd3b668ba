package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/controller"
)

// resourceWF is a workflow of one resource step, claiming a submitter it is not.
func resourceWF(ns, action, manifest string) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v4", "kind": "workflow",
		"metadata": map[string]any{"name": "roll", "namespace": ns, "annotations": map[string]string{v4.WfSubmitterAnnotation: "admin"}},
		"spec": map[string]any{"entrypoint": "roll", "arguments": map[string]any{"parameters": []any{map[string]string{"name": "key", "value": "k1"}}},
			"templates": []any{map[string]any{"name": "roll", "resource": map[string]string{"action": action, "manifest": manifest}}}}})
	return string(b)
}

func rsDeploy(ns, extra string) string {
	meta := `"name":"web"`
	if ns != "" {
		meta += fmt.Sprintf(`,"namespace":%q`, ns)
	}
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"deployment","metadata":{%s},"spec":{"instance":1,"template":{"spec":`+
		`{"containers":[{"image":"web:1"%s,"env":[{"name":"MODEL","value":"{{workflow.parameters.key}}"}]}]}}}}`, meta, extra)
}

const rsPolicy = `kind: acl-policy
metadata: {name: rs}
rules:
  - {namespaces: ["rs"], kinds: ["*"], verbs: [read, write]}
`

// A workflow's resource templates are judged at admission as writes of their objects by
// the requester: a token limited to one namespace cannot reach another namespace, a
// cluster kind, a kind that would start more workflows, a privilege it lacks or a kind
// it may not write through one; the submitter is recorded, whatever the body claims.
func TestResourceStepAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tok := tokenWithPolicy(t, url, rsPolicy, "rs", "")
	wfOnly := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: wfonly}
rules:
  - {namespaces: ["rs"], kinds: [workflow], verbs: [read, write]}
`, "wfonly", "")
	for _, c := range []struct {
		name, body, token string
		status            int
		want              string
	}{
		{"another namespace", resourceWF("rs", "apply", rsDeploy("other", "")), tok, http.StatusForbidden,
			"names namespace other: a resource step writes in its workflow's namespace rs only"},
		{"a cluster kind", resourceWF("rs", "create", `{"kind":"node","metadata":{"name":"n1"}}`), tok, http.StatusUnprocessableEntity,
			"node objects are written by berth itself"},
		{"a workflow", resourceWF("rs", "create", resourceWF("rs", "create", rsDeploy("", ""))), tok, http.StatusUnprocessableEntity,
			"kind workflow may not be written by a resource step"},
		{"a cronjob", resourceWF("rs", "create", `{"kind":"cronjob","metadata":{"name":"c"}}`), tok, http.StatusUnprocessableEntity,
			"kind cronjob may not be written by a resource step"},
		{"a privileged container", resourceWF("rs", "apply", rsDeploy("", `,"privileged":true`)), tok, http.StatusForbidden,
			"spec.templates[0].resource.manifest: spec.template.spec.containers[0].privileged"},
		{"a kind the token may not write", resourceWF("rs", "apply", rsDeploy("", "")), wfOnly, http.StatusForbidden,
			"spec.templates[0].resource.manifest: token"},
		{"a delete the token may not do", resourceWF("rs", "delete", rsDeploy("", "")), wfOnly, http.StatusForbidden,
			"may not write deployment"},
		{"a name from a parameter", resourceWF("rs", "apply", strings.Replace(rsDeploy("", ""), `"name":"web"`, `"name":"web-{{workflow.parameters.key}}"`, 1)),
			tok, http.StatusUnprocessableEntity, "must not come from {{...}} placeholders"},
		{"allowed", resourceWF("rs", "apply", rsDeploy("", "")), tok, http.StatusOK, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := callAs(t, "", http.MethodPost, url+"/v1/apply", c.body, c.token)
			wantStatus(t, r, c.status)
			if c.want != "" && !strings.Contains(decodeError(t, r).Message, c.want) {
				t.Errorf("the answer does not say %q: %s", c.want, r.body)
			}
		})
	}
	r := call(t, http.MethodGet, url+"/v1/namespaces/rs/workflows/roll", "")
	wantStatus(t, r, http.StatusOK)
	var wf v4.Workflow
	if err := json.Unmarshal(r.body, &wf); err != nil {
		t.Fatal(err)
	}
	sec, _ := acl.ParseSecret(tok)
	if got := wf.Metadata.Annotations[v4.WfSubmitterAnnotation]; got != sec.ID {
		t.Errorf("submitter %q, want the token's ID %q", got, sec.ID)
	}
}

// A resource step runs the whole admission chain with the submitter's rights of now: a
// write its token may do succeeds, a privilege it lacks fails, another namespace fails,
// and once the token is revoked the step fails saying so.
func TestDoResourceStep(t *testing.T) {
	srv, url, _, auditPath := auditedServer(t)
	tok := tokenWithPolicy(t, url, rsPolicy, "rs", "")
	sec, _ := acl.ParseSecret(tok)
	_, offset := auditLines(t, auditPath, 0)
	step := func(sub, action, manifest string) (controller.ResourceResult, error) {
		obj, err := v4.ParseWfResource(manifest, "rs")
		if err != nil {
			t.Fatal(err)
		}
		return srv.DoResourceStep(context.Background(), controller.ResourceStep{Workflow: "rs/roll", Submitter: sub,
			Action: action, Object: obj, Manifest: []byte(manifest)})
	}
	res, err := step(sec.ID, v4.WfResourceApply, strings.ReplaceAll(rsDeploy("", ""), "{{workflow.parameters.key}}", "k1"))
	if err != nil || res.Name != "web" || res.ResourceVersion == "" {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	if env := getDeployment(t, "rs", "web").Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "k1" {
		t.Errorf("the deployment's env: %+v", env)
	}
	for _, c := range []struct{ name, sub, action, manifest, want string }{
		{"a privilege", sec.ID, v4.WfResourceApply, rsDeploy("", `,"privileged":true`), "privileged"},
		{"another namespace", sec.ID, v4.WfResourceCreate, `{"kind":"configmap","metadata":{"name":"c","namespace":"other"},"datas":{}}`, "may not write configmap"},
		{"no submitter", "", v4.WfResourceDelete, rsDeploy("", ""), "no submitter is recorded"},
	} {
		if _, err := step(c.sub, c.action, c.manifest); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/acl/tokens/"+sec.ID, ""), http.StatusNoContent)
	_, err = step(sec.ID, v4.WfResourceDelete, rsDeploy("", ""))
	if err == nil || !strings.Contains(err.Error(), "is unknown or revoked") {
		t.Errorf("a revoked submitter: %v", err)
	}
	getDeployment(t, "rs", "web") // still there
	entries, _ := auditLines(t, auditPath, offset)
	var statuses []int
	for _, e := range entries {
		if strings.HasPrefix(e.Via, "resource step of workflow rs/roll") {
			statuses = append(statuses, e.Status)
		}
	}
	// apply, privilege, other namespace, no submitter, revoked: each an audit line.
	if want := []int{200, 403, 403, 401, 401}; fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("the audit lines' statuses %v, want %v", statuses, want)
	}
}

// A create performed again by the same step (its pass died after the write) finds the
// object it marked and succeeds; another step's create of that name, or a create of an
// object someone else wrote, fails as the object exists.
func TestResourceStepCreateAgain(t *testing.T) {
	srv, url, _, _ := auditedServer(t)
	tok := tokenWithPolicy(t, url, rsPolicy, "rs", "")
	sec, _ := acl.ParseSecret(tok)
	create := func(name, key string) (controller.ResourceResult, error) {
		manifest := `{"kind":"configmap","metadata":{"name":"` + name + `","namespace":"rs"},"datas":{}}`
		obj, err := v4.ParseWfResource(manifest, "rs")
		if err != nil {
			t.Fatal(err)
		}
		return srv.DoResourceStep(context.Background(), controller.ResourceStep{Workflow: "rs/roll", Submitter: sec.ID,
			Action: v4.WfResourceCreate, Object: obj, Manifest: []byte(manifest), Key: key})
	}
	first, err := create("made", "uid-1/n1")
	if err != nil || first.ResourceVersion == "" {
		t.Fatalf("create: %+v, %v", first, err)
	}
	again, err := create("made", "uid-1/n1")
	if err != nil || again.ResourceVersion != first.ResourceVersion {
		t.Errorf("the same step again: %+v, %v; want success with version %s", again, err, first.ResourceVersion)
	}
	if _, err := create("made", "uid-1/n2"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("another step: %v, want already exists", err)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/rs/configmaps", `{"kind":"configmap","metadata":{"name":"theirs","namespace":"rs"},"datas":{}}`), http.StatusCreated)
	if _, err := create("theirs", "uid-1/n3"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("an object the step did not create: %v, want already exists", err)
	}
}
