package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

const webDeploy = `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"web","namespace":"defaultGroup"},
 "spec":{"instance":6,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./w"}]}},"strategy":{"type":"RollingUpdate"}},
 "status":{"phase":"%s","revision":2,"instances":6,"current":%d,"currentAvailable":%d,"old":%d,"available":%d,"message":"%s",
  "history":[{"revision":1,"hash":"aaaa","cause":"created","template":{"spec":{}}},{"revision":2,"hash":"%s","cause":"template changed","template":{"spec":{}}}]}}`

// deployDoc is webDeploy on one line with the given status; revision 2 holds its template.
func deployDoc(phase string, cur, curAvail, old, avail int, msg string) string {
	var d v4.Deployment
	if err := json.Unmarshal([]byte(fmt.Sprintf(webDeploy, "", 0, 0, 0, 0, "", "")), &d); err != nil {
		panic(err) // the constant above is broken
	}
	doc := fmt.Sprintf(webDeploy, phase, cur, curAvail, old, avail, msg, v4.TemplateHash(d.Spec.Template))
	return strings.Join(strings.Fields(doc), " ")
}

func TestRolloutCommands(t *testing.T) {
	api, url := newFakeAPI(t)
	const base = "/v1/namespaces/defaultGroup/deployments/web"
	api.json("GET "+base, 200, deployDoc("Updating", 2, 1, 5, 6, "rolling to revision 2"))
	r := runCLI(t, url, "", "rollout", "status", "deployment/web")
	want := "deployment/web: revision 2, Updating\n  updated 2/6 (1 available), old 5, available 6/6\n  rolling to revision 2\n"
	if r.err != nil || r.stdout != want {
		t.Errorf("status: %v\n%s\nwant\n%s", r.err, r.stdout, want)
	}

	accepted := `{"object":` + deployDoc("Updating", 2, 1, 5, 6, "") + `,"operation":{"type":"undo","kind":"deployment","name":"defaultGroup/web","message":"undo to the template of revision 1"},"watch":"/v1/namespaces/defaultGroup/deployments?name=web&watch=true"}`
	for _, a := range []string{"pause", "resume", "undo"} {
		api.json("POST "+base+"/rollout/"+a, 202, accepted)
	}
	api.reset()
	for _, args := range [][]string{{"pause", "web"}, {"resume", "deployment", "web"}, {"undo", "web", "--to-revision", "1"}} {
		r := runCLI(t, url, "", append([]string{"rollout"}, args...)...)
		if r.err != nil {
			t.Fatalf("%v: %v", args, r.err)
		}
		if args[0] == "undo" && !strings.Contains(r.stdout, "undo to the template of revision 1") {
			t.Errorf("undo printed %q", r.stdout)
		}
	}
	wantReqs := []string{"POST " + base + "/rollout/pause", "POST " + base + "/rollout/resume", "POST " + base + "/rollout/undo?revision=1"}
	if got := api.got(); !slices.Equal(got, wantReqs) {
		t.Errorf("requests %v, want %v", got, wantReqs)
	}
	if r := runCLI(t, url, "", "rollout", "pause", "process", "web"); r.err == nil || !strings.Contains(r.err.Error(), "deployments") {
		t.Errorf("rollout of a process: %v", r.err)
	}

	api.json("GET "+base+"/history", 200, `{"kind":"DeploymentHistory","current":2,"items":[
		{"revision":1,"hash":"aaaa","cause":"created","created":"2026-11-22T11:00:00Z","template":{"spec":{"processes":[{"procName":"old","startCmd":"./o"}]}}},
		{"revision":2,"hash":"bbbb","cause":"template changed","created":"2026-11-22T11:59:00Z","template":{"spec":{"processes":[{"procName":"web","startCmd":"./w"}]}}}]}`)
	r = runCLI(t, url, "", "rollout", "history", "web")
	want = dedent(`
		REVISION   HASH   CAUSE              TASKS   AGE
		1          aaaa   created            old     60m
		2*         bbbb   template changed   web     60s
		`)
	if r.err != nil || r.stdout != want {
		t.Errorf("history: %v\n%s\nwant\n%s", r.err, r.stdout, want)
	}
}

func TestRolloutStatusFollows(t *testing.T) {
	api, url := newFakeAPI(t)
	const watch = "GET /v1/namespaces/defaultGroup/deployments"
	api.stream(watch,
		`{"type":"ADDED","object":`+deployDoc("Updating", 1, 0, 6, 6, "waiting")+`}`,
		`{"type":"MODIFIED","object":`+deployDoc("Updating", 1, 0, 6, 6, "waiting")+`}`,
		`{"type":"MODIFIED","object":`+deployDoc("Running", 6, 6, 0, 6, "")+`}`)
	r := runCLI(t, url, "", "rollout", "status", "web", "-w")
	if r.err != nil || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, "successfully rolled out (revision 2)") {
		t.Errorf("follow: %v\n%s", r.err, r.stdout)
	}
	api.stream(watch, `{"type":"ADDED","object":`+deployDoc("UpdateSuspend", 1, 0, 6, 6, "suspended: instance 0 failed")+`}`)
	r = runCLI(t, url, "", "rollout", "status", "web", "-w")
	var exit *ExitError
	if !errors.As(r.err, &exit) || exit.Code != 1 || !strings.Contains(exit.Message, "instance 0 failed") {
		t.Errorf("suspended: %v\n%s", r.err, r.stdout)
	}
}
