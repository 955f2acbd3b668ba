package server

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func applyResults(t *testing.T, r response) []v4.ApplyResult {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	var body struct {
		Results []v4.ApplyResult `json:"results"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Results
}

func TestApplySingle(t *testing.T) {
	base := newTestServer(t, Config{})
	url := base + "/v1/apply"
	steps := []struct {
		body   string
		action string
	}{
		{procJSON("apply-one", "web", 1), v4.ActionCreated},
		{procJSON("apply-one", "web", 1), v4.ActionUnchanged},
		{procJSON("apply-one", "web", 2), v4.ActionUpdated},
	}
	var lastRV string
	for i, st := range steps {
		res := applyResults(t, call(t, http.MethodPost, url, st.body))
		if len(res) != 1 || res[0].Action != st.action || res[0].Name != "web" || res[0].Namespace != "apply-one" || res[0].Kind != "process" {
			t.Fatalf("step %d: %+v, want %s", i, res, st.action)
		}
		if (st.action == v4.ActionUnchanged) != (res[0].ResourceVersion == lastRV) {
			t.Fatalf("step %d: rv %s, previous %s", i, res[0].ResourceVersion, lastRV)
		}
		lastRV = res[0].ResourceVersion
	}
	r := call(t, http.MethodGet, base+"/v1/namespaces/apply-one/processes/web/definition", "")
	if string(r.body) != steps[2].body {
		t.Fatalf("definition %q", r.body)
	}
}

func TestApplyBadDocumentChangesNothing(t *testing.T) {
	base := newTestServer(t, Config{})
	// A two-document stream whose second document is invalid: 422, and nothing written;
	// likewise with validate=strict for a key the default mode drops with a warning.
	for _, tc := range []struct{ query, bad string }{
		{"", cmJSON("apply-bad", "B.c", "eA==")},
		{"?validate=strict", strings.TrimSuffix(cmJSON("apply-bad", "b", "eA=="), "}") + `,"bogus":1}`},
	} {
		r := call(t, http.MethodPost, base+"/v1/apply"+tc.query, cmJSON("apply-bad", "a", "eA==")+"\n"+tc.bad)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantStatus(t, call(t, http.MethodGet, base+"/v1/namespaces/apply-bad/configmaps/a", ""), http.StatusNotFound)
	}
}

func TestApplyStream(t *testing.T) {
	base := newTestServer(t, Config{})
	url := base + "/v1/apply"
	res := applyResults(t, call(t, http.MethodPost, url, cmJSON("apply-many", "a", "eA==")+"\n"+procJSON("apply-many", "web", 1)))
	if len(res) != 2 || res[0].Action != v4.ActionCreated || res[1].Action != v4.ActionCreated {
		t.Fatalf("first apply %+v", res)
	}
	yaml := `apiVersion: v4
kind: configmap
metadata: {name: a, namespace: apply-many}
datas: {k: {type: file, content: eA==}}
---
apiVersion: v4
kind: configmap
metadata: {name: c, namespace: apply-many}
datas: {k: {type: file, content: eQ==}}
`
	res = applyResults(t, call(t, http.MethodPost, url, yaml))
	if len(res) != 2 || res[0].Action != v4.ActionUnchanged || res[1].Action != v4.ActionCreated {
		t.Fatalf("yaml apply %+v", res)
	}
	r := call(t, http.MethodGet, base+"/v1/namespaces/apply-many/configmaps/c/definition", "")
	if r.header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(r.body), "name: c") {
		t.Fatalf("yaml definition %q (%s)", r.body, r.header.Get("Content-Type"))
	}

	// A stale precondition on one document: 409 and nothing of the stream written.
	stale := strings.Replace(cmJSON("apply-many", "a", "eg=="), `"namespace"`, `"resourceVersion":"1","namespace"`, 1)
	wantStatus(t, call(t, http.MethodPost, url, cmJSON("apply-many", "new", "eA==")+"\n"+stale), http.StatusConflict)
	wantStatus(t, call(t, http.MethodGet, base+"/v1/namespaces/apply-many/configmaps/new", ""), http.StatusNotFound)
}

// TestApplyConcurrentSameObject posts 50 applies of one configmap with different contents
// at once. Apply is last-writer-wins (docs/api.md): every request answers 200, one
// "created" and the others "updated" or "unchanged", however often they collide in etcd.
func TestApplyConcurrentSameObject(t *testing.T) {
	base := newTestServer(t, Config{})
	const writers = 50
	codes := make([]int, writers)
	actions := make([]string, writers)
	bodies := make([]string, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			body := cmJSON("apply-race", "cm", base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(i))))
			resp, err := httpClientAs(t, "").Post(base+"/v1/apply", "application/json", strings.NewReader(body))
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			codes[i], bodies[i] = resp.StatusCode, string(b)
			var out applyBody
			if json.Unmarshal(b, &out) == nil && len(out.Results) == 1 {
				actions[i] = out.Results[0].Action
			}
		})
	}
	close(start)
	wg.Wait()
	count := map[string]int{}
	for i := range writers {
		if codes[i] != http.StatusOK {
			t.Errorf("apply %d: status %d: %s", i, codes[i], bodies[i])
			continue
		}
		count[actions[i]]++
	}
	if count[v4.ActionCreated] != 1 || count[v4.ActionCreated]+count[v4.ActionUpdated]+count[v4.ActionUnchanged] != writers {
		t.Errorf("actions %v, want one created and the rest updated or unchanged", count)
	}
}

// A key that BCS declares and berth ignores is accepted: apply's result and a Warning
// header say so, and so does a create's header.
func TestApplyAndCreateReturnWarnings(t *testing.T) {
	base := newTestServer(t, Config{})
	doc := strings.Replace(procJSON("warn", "web", 1), `"spec":`, `"updatePolicy":{"updateDelay":5},"spec":`, 1)
	r := call(t, http.MethodPost, base+"/v1/apply", doc)
	res := applyResults(t, r)
	want := "updatePolicy is ignored by berth (BCS parsed it and never used it)"
	if len(res) != 1 || len(res[0].Warnings) != 1 || res[0].Warnings[0].String() != want {
		t.Errorf("apply's results: %+v, want the warning %q", res, want)
	}
	if got := r.header.Values("Warning"); len(got) != 1 || got[0] != `299 berth "`+want+`"` {
		t.Errorf("apply's Warning headers: %q", got)
	}
	r = call(t, http.MethodPost, base+"/v1/namespaces/warn/processes", strings.Replace(doc, `"name":"web"`, `"name":"api"`, 1))
	wantStatus(t, r, http.StatusCreated)
	if got := r.header.Values("Warning"); len(got) != 1 || got[0] != `299 berth "`+want+`"` {
		t.Errorf("create's Warning headers: %q", got)
	}
}
