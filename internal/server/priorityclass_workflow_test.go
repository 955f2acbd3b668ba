package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// wfWithSpec is a one-step workflow whose spec starts with extra (`"priorityClassName":"x",`).
func wfWithSpec(ns, name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":%q},"spec":{%s"entrypoint":"main",`+
		`"templates":[{"name":"main","container":{"image":"x"}}]}}`, name, ns, extra)
}

func cronWfWithSpec(ns, name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"cronworkflow","metadata":{"name":%q,"namespace":%q},"spec":{"schedule":"@hourly",`+
		`"workflowSpec":{%s"entrypoint":"main","templates":[{"name":"main","container":{"image":"x"}}]}}}`, name, ns, extra)
}

func wfLibWithSpec(ns, name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflowtemplate","metadata":{"name":%q,"namespace":%q},"spec":{%s`+
		`"templates":[{"name":"main","container":{"image":"x"}}]}}`, name, ns, extra)
}

func dsWithSpec(ns, name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"daemonset","metadata":{"name":%q,"namespace":%q},"spec":{%s`+
		`"template":{"spec":{"processes":[{"procName":"agent","startCmd":"./agent"}]}}}}`, name, ns, extra)
}

// storedScheduling is the scheduling fields admission recorded on a stored object.
func storedScheduling(t *testing.T, kind v4.Kind, ns, name string) v4.Scheduling {
	t.Helper()
	o, err := testStore.Get(context.Background(), kind, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	switch o := o.(type) {
	case *v4.Workflow:
		return o.Spec.Scheduling
	case *v4.CronWorkflow:
		return o.Spec.WorkflowSpec.Scheduling
	case *v4.Daemonset:
		return o.Spec.Scheduling
	}
	t.Fatalf("%s/%s is a %T", ns, name, o)
	return v4.Scheduling{}
}

// Workflows (with Argo's podPriorityClassName), cronworkflows, workflow templates and
// daemonsets go through the admission of applications and jobs: a namespace-limited token
// may not name a class above the default, a system class, or a priority of its own.
func TestWorkflowPriorityAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, teamAPolicy, "team-a", "")
	for name, body := range map[string]string{
		"normal": `{"value":0,"globalDefault":true}`, "batch": `{"value":-10,"preemptionPolicy":"Never"}`,
		"high": `{"value":1000}`, "system": `{"value":2000000000}`,
	} {
		wantStatus(t, call(t, http.MethodPut, url+"/v1/priorityclasses/"+name, body), http.StatusOK)
	}
	for _, c := range []struct {
		what, body string
		code       int
		field      string
	}{
		{"a class above the default", wfWithSpec("team-a", "w", `"priorityClassName":"high",`), http.StatusForbidden, "spec.priorityClassName"},
		{"Argo's podPriorityClassName", wfWithSpec("team-a", "w", `"podPriorityClassName":"high",`), http.StatusForbidden, "spec.priorityClassName"},
		{"a system class", wfWithSpec("team-a", "w", `"priorityClassName":"system",`), http.StatusForbidden, "spec.priorityClassName"},
		{"a priority set by hand", wfWithSpec("team-a", "w", `"priority":500,`), http.StatusForbidden, "spec.priority"},
		{"an unknown class", wfWithSpec("team-a", "w", `"priorityClassName":"nope",`), http.StatusUnprocessableEntity, "spec.priorityClassName"},
		{"two different classes", wfWithSpec("team-a", "w", `"priorityClassName":"batch","podPriorityClassName":"high",`), http.StatusUnprocessableEntity, "spec.podPriorityClassName"},
		{"a disruption budget", wfWithSpec("team-a", "w", `"disruptionBudget":{"maxUnavailable":1},`), http.StatusUnprocessableEntity, "spec.disruptionBudget"},
		{"a cronworkflow above the default", cronWfWithSpec("team-a", "c", `"priorityClassName":"high",`), http.StatusForbidden, "spec.workflowSpec.priorityClassName"},
		{"a workflow template above the default", wfLibWithSpec("team-a", "l", `"priorityClassName":"high",`), http.StatusForbidden, "spec.priorityClassName"},
		{"a daemonset with a system class", dsWithSpec("team-a", "d", `"priorityClassName":"system",`), http.StatusForbidden, "spec.priorityClassName"},
		{"a revocable daemonset", dsWithSpec("team-a", "d", `"tier":"revocable",`), http.StatusUnprocessableEntity, "spec.tier"},
	} {
		r := callAs(t, "", http.MethodPost, url+"/v1/apply", c.body, tenant)
		wantStatus(t, r, c.code)
		if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != c.field {
			t.Errorf("%s: %+v, want the field %s", c.what, e, c.field)
		}
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/team-a/workflows", wfWithSpec("team-a", "w", `"priority":500,`), tenant), http.StatusForbidden)

	// At or below the default: admitted, the class's value and policy recorded.
	for _, body := range []string{wfWithSpec("team-a", "b", `"podPriorityClassName":"batch","tier":"revocable",`), dsWithSpec("team-a", "d", ""),
		cronWfWithSpec("team-a", "c", `"priorityClassName":"batch",`)} {
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", body, tenant), http.StatusOK)
	}
	if s := storedScheduling(t, v4.KindWorkflow, "team-a", "b"); s.PriorityValue() != -10 || s.MayPreempt() || s.PriorityClassName != "batch" || !s.Revocable() {
		t.Errorf("workflow b: %+v", s)
	}
	if s := storedScheduling(t, v4.KindCronWorkflow, "team-a", "c"); s.PriorityValue() != -10 {
		t.Errorf("cronworkflow c: %+v", s)
	}
	if s := storedScheduling(t, v4.KindDaemonset, "team-a", "d"); s.Priority == nil || *s.Priority != 0 {
		t.Errorf("daemonset d: %+v", s)
	}
	// The privilege "priority" lets the namespace's writer name the higher class.
	urgent := tokenWithPolicy(t, url, "kind: acl-policy\nmetadata: {name: urgent}\nrules:\n"+
		"  - {namespaces: [team-a], kinds: [\"*\"], verbs: [read, write], privileges: [priority]}\n", "urgent", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", wfWithSpec("team-a", "h", `"priorityClassName":"high",`), urgent), http.StatusOK)
	if s := storedScheduling(t, v4.KindWorkflow, "team-a", "h"); s.PriorityValue() != 1000 || !s.MayPreempt() {
		t.Errorf("workflow h: %+v", s)
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", wfWithSpec("team-a", "s", `"priorityClassName":"system",`), urgent), http.StatusForbidden)
}

// A nomination holds room on a node for its preemptor: a namespace-limited token that
// writes one in a document's status (a workload, a job or a workflow, created or
// updated) reserves nothing; the stored status has none.
func TestTenantCannotPlantNominations(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, teamAPolicy, "team-a", "")
	const status = `"status":{"nominated":[{"index":0,"node":"n1","victims":["x"],"at":"2026-01-01T00:00:00Z",` +
		`"hold":{"resources":{"cpu":64,"memoryMB":1048576},"ports":[22],"priority":1000000000}}]},`
	withStatus := func(doc string) string { return strings.Replace(doc, `"spec":`, status+`"spec":`, 1) }
	job := `{"apiVersion":"v4","kind":"job","metadata":{"name":"j","namespace":"team-a"},` +
		`"spec":{"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`
	for _, c := range []struct {
		kind v4.Kind
		name string
		doc  string
	}{
		{v4.KindProcess, "p", procJSON("team-a", "p", 1)},
		{v4.KindJob, "j", job},
		{v4.KindWorkflow, "w", wfWithSpec("team-a", "w", "")},
	} {
		for _, doc := range []string{withStatus(c.doc), c.doc, withStatus(c.doc)} { // created, then updated
			wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", doc, tenant), http.StatusOK)
		}
		o, err := testStore.Get(context.Background(), c.kind, "team-a", c.name)
		if err != nil {
			t.Fatal(err)
		}
		var held []v4.Nomination
		switch o := o.(type) {
		case *v4.Process:
			held = o.Status.Nominated
		case *v4.Job:
			held = o.Status.Nominated
		case *v4.Workflow:
			held = o.Status.Nominated
		}
		if len(held) != 0 {
			t.Errorf("%s %s: the tenant's nominations were stored: %+v", c.kind, c.name, held)
		}
	}
}
