package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// quotaProcJSON is a process of n instances whose one task requests cpu (none: "").
func quotaProcJSON(name string, n int, cpu string) string {
	res := ""
	if cpu != "" {
		res = fmt.Sprintf(`,"resources":{"requests":{"cpu":%q}}`, cpu)
	}
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"team-a"},"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"%s}]}}}}`,
		name, n, res)
}

type quotaView struct {
	Limits struct {
		Resources map[string]float64 `json:"resources"`
	} `json:"limits"`
	ResourceUsage map[string]float64 `json:"resourceUsage"`
}

// A token limited to its namespace cannot raise its own quota, nor escape it: not by
// scaling, not with many small objects (the limit defaults give each a request), not
// with a GPU, a job or a workflow whose one run is past the quota, nor with a task above
// the namespace's maximum. The refusals name the namespace, the resource, the usage and
// the limit; a quota below the usage needs force.
func TestResourceQuotaAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, teamAPolicy, "team-a", "")
	as := func(method, path, body string) response { return callAs(t, "", method, url+path, body, tenant) }
	const limits = `{"resources":{"cpu":2,"memory":1024,"gpu":0,"instances":4},` +
		`"limitDefaults":{"defaultRequests":{"cpu":0.25,"memory":64},"max":{"cpu":1}}}`
	refused := func(t *testing.T, r response, status int, want string) {
		t.Helper()
		wantStatus(t, r, status)
		if e := decodeError(t, r); !strings.Contains(e.Message, want) && !strings.Contains(string(r.body), want) {
			t.Errorf("refusal %q, want %q", e.Message, want)
		}
	}

	t.Run("only administrators set quotas", func(t *testing.T) {
		wantStatus(t, as(http.MethodPut, "/v1/namespaces/team-a/quota?force=true", `{"resources":{"cpu":1000}}`), http.StatusForbidden)
		wantStatus(t, as(http.MethodDelete, "/v1/namespaces/team-a/quota", ""), http.StatusForbidden)
		wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/team-a/quota", limits), http.StatusOK)
		r := call(t, http.MethodPut, url+"/v1/namespaces/team-a/quota", `{"resources":{"cpus":1,"gpu":-1},"limitDefaults":{"max":{"cpu":-2}}}`)
		refused(t, r, http.StatusUnprocessableEntity, "resources.cpus")
		for _, f := range []string{"resources.gpu", "limitDefaults.max.cpu"} {
			if !strings.Contains(string(r.body), f) {
				t.Errorf("bad quota: %s does not name %s", r.body, f)
			}
		}
	})
	t.Run("scale past the quota", func(t *testing.T) {
		wantStatus(t, as(http.MethodPost, "/v1/apply", quotaProcJSON("web", 2, "0.5")), http.StatusOK)
		r := as(http.MethodPost, "/v1/namespaces/team-a/processes/web/scale", `{"instances":5}`)
		refused(t, r, http.StatusForbidden, "namespace team-a: cpu quota exceeded: 1 used + 1.5 asked > 2")
		wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/processes/web/scale", `{"instances":3}`), http.StatusAccepted)
		// A replacement that grows is refused the same way.
		refused(t, as(http.MethodPut, "/v1/namespaces/team-a/processes/web", quotaProcJSON("web", 3, "1")), http.StatusForbidden,
			"cpu quota exceeded: 1.5 used + 1.5 asked > 2")
	})
	t.Run("many small objects", func(t *testing.T) {
		// Without a request, each gets the default 0.25 cpu: 1.5 + 0.25 fits, the next
		// instance is past the instances quota (4).
		wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/processes", quotaProcJSON("small-0", 1, "")), http.StatusCreated)
		refused(t, as(http.MethodPost, "/v1/namespaces/team-a/processes", quotaProcJSON("small-1", 1, "")), http.StatusForbidden,
			"namespace team-a: instances quota exceeded: 4 used + 1 asked > 4")
		r := as(http.MethodGet, "/v1/namespaces/team-a/processes/small-0", "")
		if !strings.Contains(string(r.body), `"cpu": "0.25"`) && !strings.Contains(string(r.body), `"cpu":"0.25"`) {
			t.Errorf("the default request is not in the stored object: %s", r.body)
		}
	})
	t.Run("a stream counts its objects together", func(t *testing.T) {
		wantStatus(t, as(http.MethodDelete, "/v1/namespaces/team-a/processes/small-0", ""), http.StatusOK)
		stream := quotaProcJSON("s-1", 1, "0.1") + "\n" + quotaProcJSON("s-2", 1, "0.1")
		refused(t, as(http.MethodPost, "/v1/apply", stream), http.StatusForbidden, "instances quota exceeded: 4 used + 1 asked > 4")
	})
	t.Run("a task above the maximum", func(t *testing.T) {
		wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-b/processes", strings.ReplaceAll(quotaProcJSON("big", 1, "1.5"), "team-a", "team-b")),
			http.StatusCreated)
		refused(t, as(http.MethodPost, "/v1/namespaces/team-a/processes", quotaProcJSON("big", 1, "1.5")), http.StatusUnprocessableEntity,
			"spec.template.spec.processes[0].resources.requests.cpu")
	})
	t.Run("a GPU is refused before any card is looked for", func(t *testing.T) {
		app := `{"apiVersion":"v4","kind":"application","metadata":{"name":"gpu","namespace":"team-a"},"spec":{"instance":1,"template":{"spec":{"containers":[` +
			`{"image":"busybox","resources":{"extendedResources":[{"name":"nvidia.com/gpu","value":1}]}}]}}}}`
		refused(t, as(http.MethodPost, "/v1/apply", app), http.StatusForbidden, "namespace team-a: gpu quota exceeded: 0 used + 1 asked > 0")
	})
	t.Run("a job or workflow whose one run is past the quota", func(t *testing.T) {
		big := `{"procName":"work","startCmd":"./work","resources":{"requests":{"cpu":"1","memory":"2048"}}}`
		refused(t, as(http.MethodPost, "/v1/apply", strings.Replace(jobJSON("team-a", big, `,"parallelism":100`), "batch", "big", 1)),
			http.StatusForbidden, "memory quota exceeded: 0MB used + 2048MB asked > 1024MB")
		// Many small runs are admitted: the job controller starts those that fit.
		small := `{"procName":"work","startCmd":"./work","resources":{"requests":{"cpu":"0.1"}}}`
		wantStatus(t, as(http.MethodPost, "/v1/apply", jobJSON("team-a", small, `,"parallelism":100,"completions":100`)), http.StatusOK)
		wf := `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"fan","namespace":"team-a"},"spec":{"entrypoint":"main","templates":[` +
			`{"name":"main","container":{"image":"x","resources":{"requests":{"memory":"4096"}}}}]}}`
		refused(t, as(http.MethodPost, "/v1/apply", wf), http.StatusForbidden, "memory quota exceeded")
	})
	t.Run("through BCS's routes", func(t *testing.T) {
		wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/bq/quota", `{"resources":{"cpu":0.25}}`), http.StatusOK)
		door := url + "/bcsapi/v4/scheduler/mesos/namespaces/bq/applications"
		wantBCS(t, bcsCall(t, http.MethodPost, door, appDoc("bq", "busybox:1"), ""), 0)
		for _, c := range []struct{ method, path, body string }{
			{http.MethodPut, "/web/scale/3", ""},
			{http.MethodPut, "?instances=3", strings.Replace(appDoc("bq", "busybox:2"), `"instance":1`, `"instance":3`, 1)},
		} {
			a := bcsCall(t, c.method, door+c.path, c.body, "")
			if a.Result || !strings.Contains(a.Message, "namespace bq: cpu quota exceeded: 0.1 used + 0.2 asked > 0.25") {
				t.Errorf("BCS %s %s: %+v", c.method, c.path, a)
			}
		}
	})
	t.Run("concurrent writes are judged one after the other", func(t *testing.T) {
		wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/race/quota", `{"resources":{"instances":10}}`), http.StatusOK)
		codes := make(chan int, 20)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				doc := strings.ReplaceAll(quotaProcJSON(fmt.Sprint("p", i), 1, "0.1"), "team-a", "race")
				codes <- call(t, http.MethodPost, url+"/v1/namespaces/race/processes", doc).code
			})
		}
		wg.Wait()
		close(codes)
		count := map[int]int{}
		for c := range codes {
			count[c]++
		}
		if count[http.StatusCreated] != 10 || count[http.StatusForbidden] != 10 {
			t.Errorf("answers %v, want 10 created and 10 refused", count)
		}
	})
	t.Run("usage and a quota below it", func(t *testing.T) {
		r := as(http.MethodGet, "/v1/namespaces/team-a/quota", "")
		wantStatus(t, r, http.StatusOK)
		var q quotaView
		if err := json.Unmarshal(r.body, &q); err != nil {
			t.Fatal(err)
		}
		if q.ResourceUsage["cpu"] != 1.5 || q.ResourceUsage["instances"] != 3 || q.Limits.Resources["cpu"] != 2 {
			t.Fatalf("quota view: %s", r.body)
		}
		refused(t, call(t, http.MethodPut, url+"/v1/namespaces/team-a/quota", `{"resources":{"cpu":1}}`), http.StatusConflict,
			"namespace team-a already uses more than the quota asked: cpu 1.5 > 1")
		wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/team-a/quota?force=true", `{"resources":{"cpu":1}}`), http.StatusOK)
		// Above the quota, the namespace may shrink but not grow.
		wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/processes/web/scale", `{"instances":2}`), http.StatusAccepted)
		refused(t, as(http.MethodPost, "/v1/namespaces/team-a/processes/web/scale", `{"instances":3}`), http.StatusForbidden, "cpu quota exceeded")
	})
}
