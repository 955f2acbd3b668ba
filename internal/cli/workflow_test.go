package cli

import (
	"strings"
	"testing"
)

const workflowJSON = `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"pipe","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:55:00Z"},
	"spec":{"entrypoint":"main","templates":[{"name":"main","steps":[[{"name":"a","template":"run"}]]},{"name":"run","container":{"image":"x"}}]},
	"status":{"phase":"Running","startedAt":"2026-11-22T11:58:00Z","nodes":{"n1":{"id":"n1","name":"pipe","type":"Steps","phase":"Running"},
		"n2":{"id":"n2","name":"pipe[0].a","type":"Pod","phase":"Succeeded"},"n3":{"id":"n3","name":"pipe[0].b","type":"Pod","phase":"Running"}}}}`

func TestGetWorkflows(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/workflows", 200, `{"kind":"List","items":[`+workflowJSON+`]}`)
	r := runCLIOK(t, url, "", "get", "wf")
	got := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{"NAME PHASE PROGRESS STARTED DURATION MESSAGE", "pipe Running 1/2 2m ago 2m <none>"} {
		if !strings.Contains(got, want) {
			t.Errorf("get wf =\n%s\nlacks %q", r.stdout, want)
		}
	}
}
