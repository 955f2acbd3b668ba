package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func wfTemplateJSON(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflowtemplate","metadata":{"name":%q,"namespace":%q},"spec":{"templates":[`+
		`{"name":"echo","inputs":{"parameters":[{"name":"m"},{"name":"n","default":"1"}]},"container":{"image":"x","args":["{{inputs.parameters.m}}"]}}]}}`, name, ns)
}

func wfUsingJSON(ns, name, lib, tmpl, args string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":%q},"spec":{"entrypoint":"main","templates":[`+
		`{"name":"main","steps":[[{"name":"a","templateRef":{"name":%q,"template":%q}%s}]]}]}}`, name, ns, lib, tmpl, args)
}

// A workflow's templateRefs are checked against the workflowtemplates of its namespace,
// stored or in the same stream; a workflow that would fail at its first step is refused
// with the field named.
func TestWorkflowTemplateRefsAtAdmission(t *testing.T) {
	base := newTestServer(t, Config{})
	const ns = "wf"
	args := `,"arguments":{"parameters":[{"name":"m","value":"hi"}]}`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"no such workflowtemplate", wfUsingJSON(ns, "a", "lib", "echo", args), http.StatusUnprocessableEntity,
			"spec.templates[0].steps[0][0].templateRef.name: workflowtemplate wf/lib does not exist"},
		{"in the same stream", wfTemplateJSON(ns, "lib") + "\n" + wfUsingJSON(ns, "b", "lib", "echo", args), http.StatusOK, ""},
		{"no such template", wfUsingJSON(ns, "c", "lib", "ehco", args), http.StatusUnprocessableEntity,
			`spec.templates[0].steps[0][0].templateRef.template: workflowtemplate wf/lib has no template "ehco"`},
		{"a missing argument", wfUsingJSON(ns, "d", "lib", "echo", ""), http.StatusUnprocessableEntity,
			`spec.templates[0].steps[0][0].arguments.parameters: missing input parameter "m"`},
		{"stored", wfUsingJSON(ns, "e", "lib", "echo", args), http.StatusOK, ""},
		{"a cycle is refused by validation", strings.Replace(wfUsingJSON(ns, "f", "lib", "echo", args), `"steps":[[`,
			`"dag":{"tasks":[{"name":"x","template":"main","dependencies":["y"]},{"name":"y","template":"main","dependencies":["x"]}]},"x":[[`, 1),
			http.StatusUnprocessableEntity, "dependency cycle: x → y → x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, http.MethodPost, base+"/v1/apply", tc.body)
			wantStatus(t, r, tc.status)
			if want := strings.ReplaceAll(tc.want, `"`, `\"`); want != "" && !strings.Contains(string(r.body), want) {
				t.Errorf("the answer does not say %q:\n%s", tc.want, r.body)
			}
		})
	}
	r := call(t, http.MethodGet, base+"/v1/namespaces/"+ns+"/workflows/e", "")
	wantStatus(t, r, http.StatusOK)
}

// A workflow's templates ask for the privileges their tasks would as a workload's: a
// token that may write workflows cannot run a privileged container or a root process
// through one, and the refusal names the template's field.
func TestWorkflowPrivileges(t *testing.T) {
	url := newTestServer(t, Config{})
	deployer := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: deployer}
rules:
  - {namespaces: ["wp"], kinds: ["*"], verbs: [read, write]}
`, "deployer", "")
	wf := func(kind, tmpl string) string {
		return fmt.Sprintf(`{"apiVersion":"v4","kind":%q,"metadata":{"name":"w","namespace":"wp"},"spec":{"entrypoint":"a","templates":[{"name":"ok","suspend":{}},{"name":"a",%s}]}}`, kind, tmpl)
	}
	for _, c := range []struct{ body, field, priv string }{
		{wf("workflow", `"container":{"image":"x","privileged":true}`), "spec.templates[1].container.privileged", "privileged"},
		{wf("workflowtemplate", `"process":{"procName":"p","startCmd":"./p","user":"root"}`), "spec.templates[1].process.user", "root"},
	} {
		r := callAs(t, "", http.MethodPost, url+"/v1/apply", c.body, deployer)
		wantStatus(t, r, http.StatusForbidden)
		e := decodeError(t, r)
		if len(e.Details) == 0 || e.Details[0].Field != c.field || !strings.Contains(e.Message, `privilege "`+c.priv+`"`) {
			t.Errorf("%s: %+v", c.field, e)
		}
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", wf("workflow", `"container":{"image":"x"}`), deployer), http.StatusOK)
}
