package cli

import (
	"strings"
	"testing"
)

// berth get lists custom resource definitions and a definition's resources by
// plural.group, in a table of names or as the documents.
func TestGetCustomResources(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/customresourcedefinitions", 200, `{"kind":"List","items":[
		{"kind":"CustomResourceDefinition","metadata":{"name":"crontabs.bkbcs.tencent.com","creationTimestamp":"2026-11-22T11:55:00Z"}}]}`)
	api.json("GET /v1/crontabs.bkbcs.tencent.com", 200, `{"kind":"List","items":[
		{"kind":"CronTab","metadata":{"name":"nightly","namespace":"ns-a","creationTimestamp":"2026-11-22T11:59:00Z"}}]}`)
	api.json("GET /v1/namespaces/ns-a/crontabs.bkbcs.tencent.com/nightly", 200,
		`{"apiVersion":"bkbcs.tencent.com/v1","kind":"CronTab","metadata":{"name":"nightly","namespace":"ns-a"},"spec":{"cronSpec":"0 3 * * *"}}`)

	r := runCLIOK(t, url, "", "get", "crd")
	if want := dedent(`
		NAME                         AGE
		crontabs.bkbcs.tencent.com   5m
		`); r.stdout != want {
		t.Errorf("definitions:\n%s\nwant\n%s", r.stdout, want)
	}
	r = runCLIOK(t, url, "", "get", "crontabs.bkbcs.tencent.com", "-A")
	if want := dedent(`
		NAMESPACE   NAME      AGE
		ns-a        nightly   60s
		`); r.stdout != want {
		t.Errorf("resources:\n%s\nwant\n%s", r.stdout, want)
	}
	r = runCLIOK(t, url, "", "get", "crontabs.bkbcs.tencent.com", "nightly", "-n", "ns-a", "-o", "yaml")
	if !strings.Contains(r.stdout, "cronSpec: 0 3 * * *") {
		t.Errorf("resource yaml:\n%s", r.stdout)
	}
	if r := runCLI(t, url, "", "get", "crontabs.bkbcs.tencent.com", "-w"); r.err == nil {
		t.Error("--watch of custom resources was accepted")
	}
}
