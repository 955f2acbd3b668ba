package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func cronJobJSON(ns, schedule, task string) string {
	return `{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"nightly","namespace":"` + ns + `"},` +
		`"spec":{"schedule":"` + schedule + `","jobTemplate":{"spec":{"template":{"spec":{"processes":[` + task + `]}}}}}}`
}

// A schedule that fires more than once a minute is refused unless the server allows
// it, and the refusal names the field and the option.
func TestCronSubMinuteAdmission(t *testing.T) {
	plain := `{"procName":"work","startCmd":"./work"}`
	url := newTestServer(t, Config{})
	r := call(t, http.MethodPost, url+"/v1/apply", cronJobJSON("adm", "@every 2s", plain))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "spec.schedule" ||
		!strings.Contains(e.Details[0].Message, allowSubMinuteFlag) {
		t.Errorf("sub-minute refusal %+v", e)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", cronJobJSON("adm", "@every 1m", plain)), http.StatusOK)

	allowed := newTestServer(t, Config{AllowSubMinuteSchedules: true})
	wantStatus(t, call(t, http.MethodPost, allowed+"/v1/apply", cronJobJSON("adm", "@every 2s", plain)), http.StatusOK)
	r = call(t, http.MethodPost, allowed+"/v1/apply", cronJobJSON("adm", "@every 500ms", plain))
	wantStatus(t, r, http.StatusUnprocessableEntity) // under a second is never admitted
}

// A cronjob's template is judged as a job's is, with its own path; a trigger is the
// requester's write of the run: it needs the rights and privileges the run asks for.
func TestCronPrivilegesAndTrigger(t *testing.T) {
	url := newTestServer(t, Config{})
	deployer := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: batch}
rules:
  - {namespaces: ["pv"], kinds: ["*"], verbs: [read, write]}
`, "batch", "")
	cronOnly := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: crononly}
rules:
  - {namespaces: ["pv"], kinds: ["cronjob"], verbs: [read, write]}
`, "crononly", "")
	root := `{"procName":"work","startCmd":"./work","user":"root"}`
	plain := `{"procName":"work","startCmd":"./work"}`
	r := callAs(t, "", http.MethodPost, url+"/v1/apply", cronJobJSON("pv", "@hourly", root), deployer)
	wantStatus(t, r, http.StatusForbidden)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "spec.jobTemplate.spec.template.spec.processes[0].user" {
		t.Errorf("root cronjob: %+v", e)
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", cronJobJSON("pv", "@hourly", plain), deployer), http.StatusOK)
	rootWF := `{"apiVersion":"v4","kind":"cronworkflow","metadata":{"name":"wf","namespace":"pv"},"spec":{"schedule":"@hourly",` +
		`"workflowSpec":{"entrypoint":"main","templates":[{"name":"main","process":` + root + `}]}}}`
	r = callAs(t, "", http.MethodPost, url+"/v1/apply", rootWF, deployer)
	wantStatus(t, r, http.StatusForbidden)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "spec.workflowSpec.templates[0].process.user" {
		t.Errorf("root cronworkflow: %+v", e)
	}

	trigger := url + "/v1/namespaces/pv/cronjobs/nightly/actions/trigger"
	wantStatus(t, callAs(t, "", http.MethodPost, trigger, "", cronOnly), http.StatusForbidden) // no right on jobs
	r = callAs(t, "", http.MethodPost, trigger, "", deployer)
	wantStatus(t, r, http.StatusCreated)
	var job v4.Job
	if err := json.Unmarshal(r.body, &job); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(job.Metadata.Name, "nightly-m") || job.Metadata.Labels[v4.CronJobLabel] != "nightly" {
		t.Errorf("triggered run %+v", job.Metadata)
	}
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/pv/jobs/"+job.Metadata.Name, "", deployer), http.StatusOK)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/pv/cronjobs/none/actions/trigger", "", deployer), http.StatusNotFound)
}
