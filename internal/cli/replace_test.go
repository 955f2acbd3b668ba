package cli

import (
	"strings"
	"testing"
)

// berth replace sends the count only when given, and force; it prints the operation, or
// that nothing needed replacing; a bad count or kind sends nothing.
func TestReplaceCommand(t *testing.T) {
	api, url := newFakeAPI(t)
	const procs = "/v1/namespaces/defaultGroup/processes/web/replace"
	const apps = "/v1/namespaces/demo/applications/api/replace"
	api.json("POST "+procs, 202, `{"object":{},"operation":{"type":"replace","kind":"process","name":"defaultGroup/web","message":"replace the first 2 instances not running the stored template, one at a time: instance 0 (0.web) now"},"watch":"/v1/namespaces/defaultGroup/processes?name=web&watch=true"}`)
	api.json("POST "+apps, 202, `{"object":{},"watch":"/v1/namespaces/demo/applications?name=api&watch=true"}`)
	r := runCLIOK(t, url, "", "replace", "process", "web", "--instances", "2")
	if want := "process/web: replace the first 2 instances not running the stored template, one at a time: instance 0 (0.web) now (watch: /v1/namespaces/defaultGroup/processes?name=web&watch=true)\n"; r.stdout != want {
		t.Errorf("printed %q, want %q", r.stdout, want)
	}
	if b := api.body("POST " + procs); b != `{"instances":2}` {
		t.Errorf("body %s", b)
	}
	r = runCLIOK(t, url, "", "replace", "app", "api", "-n", "demo", "--force")
	if !strings.Contains(r.stdout, "nothing to replace") || api.body("POST "+apps) != `{"force":true}` {
		t.Errorf("printed %q, sent %s", r.stdout, api.body("POST "+apps))
	}
	api.reset()
	for _, args := range [][]string{{"replace", "process", "web", "--instances", "-1"}, {"replace", "deployment", "api"}, {"replace", "process", "web", "--instances", "x"}} {
		if r := runCLI(t, url, "", args...); r.err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if got := api.got(); len(got) != 0 {
		t.Errorf("refused commands sent requests: %v", got)
	}
}
