package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

// storedStopped is spec.stoppedInstances of a stored object of plural in namespace inst.
func storedStopped(t *testing.T, url, plural, name string) []int {
	t.Helper()
	r := call(t, http.MethodGet, url+"/v1/namespaces/inst/"+plural+"/"+name, "")
	wantStatus(t, r, http.StatusOK)
	var o struct {
		Spec struct {
			StoppedInstances []int `json:"stoppedInstances"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatal(err)
	}
	return o.Spec.StoppedInstances
}

// Stop and start of one instance, for every kind with numbered instances: 202 with the
// object, idempotent, an event each time the list changes; an update that leaves the
// list out keeps it, a scale-down forgets what it removes.
func TestInstanceStopStart(t *testing.T) {
	url := newTestServer(t, Config{})
	v1 := url + "/v1/namespaces/inst/"
	for _, tc := range []struct {
		plural, doc string
		kind        v4.Kind
	}{
		{"applications", strings.NewReplacer(`"instance":1`, `"instance":3`).Replace(appDoc("inst", "busybox:1")), v4.KindApplication},
		{"processes", procJSON("inst", "web", 3), v4.KindProcess},
		{"deployments", deployJSON("inst", "web", "one"), v4.KindDeployment},
	} {
		t.Run(tc.plural, func(t *testing.T) {
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural, tc.doc), http.StatusCreated)
			for range 2 { // the second asks for what is already so
				r := call(t, http.MethodPost, v1+tc.plural+"/web/instances/1/stop", "")
				wantStatus(t, r, http.StatusAccepted)
				var acc v4.Accepted
				if err := json.Unmarshal(r.body, &acc); err != nil || !strings.Contains(string(acc.Object), `"stoppedInstances":[1]`) {
					t.Fatalf("answer %s (%v)", r.body, err)
				}
			}
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural+"/web/instances/2/stop", ""), http.StatusAccepted)
			if got := storedStopped(t, url, tc.plural, "web"); !slices.Equal(got, []int{1, 2}) {
				t.Fatalf("stoppedInstances %v, want [1 2]", got)
			}
			storetest.FlushEvents(t, testStore)
			evs := string(call(t, http.MethodGet, url+"/v1/events?kind="+string(tc.kind)+"&namespace=inst&name=web", "").body)
			if strings.Count(evs, `"reason":"InstanceStopped"`) != 2 {
				t.Fatalf("want one InstanceStopped event for each change: %s", evs)
			}
			// An update without the list keeps it.
			wantStatus(t, call(t, http.MethodPut, v1+tc.plural+"/web", tc.doc), http.StatusOK)
			if got := storedStopped(t, url, tc.plural, "web"); !slices.Equal(got, []int{1, 2}) {
				t.Fatalf("stoppedInstances %v after an update that left them out", got)
			}
			// A scale-down forgets the stopped instances it removes.
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural+"/web/scale", `{"instances": 2}`), http.StatusAccepted)
			if got := storedStopped(t, url, tc.plural, "web"); !slices.Equal(got, []int{1}) {
				t.Fatalf("stoppedInstances %v after a scale to 2, want [1]", got)
			}
			for range 2 {
				wantStatus(t, call(t, http.MethodPost, v1+tc.plural+"/web/instances/1/start", ""), http.StatusAccepted)
			}
			if got := storedStopped(t, url, tc.plural, "web"); len(got) != 0 {
				t.Fatalf("stoppedInstances %v after the start", got)
			}
			// "all" stops or starts every instance in one write.
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural+"/web/instances/all/stop", ""), http.StatusAccepted)
			if got := storedStopped(t, url, tc.plural, "web"); !slices.Equal(got, []int{0, 1}) {
				t.Fatalf("stoppedInstances %v after stopping all, want [0 1]", got)
			}
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural+"/web/instances/all/start", ""), http.StatusAccepted)
			if got := storedStopped(t, url, tc.plural, "web"); len(got) != 0 {
				t.Fatalf("stoppedInstances %v after starting all", got)
			}
		})
	}
}

// What stop and start refuse changes nothing and names what is at fault; a token limited
// to another namespace and a read-only token cannot stop an instance.
func TestInstanceStopRefusals(t *testing.T) {
	url := newTestServer(t, Config{})
	procs := url + "/v1/namespaces/inst/processes"
	wantStatus(t, call(t, http.MethodPost, procs, procJSON("inst", "web", 2)), http.StatusCreated)
	for _, tc := range []struct {
		name, path string
		code       int
		field, msg string
	}{
		{"beyond the count", "/web/instances/2/stop", http.StatusUnprocessableEntity, "index", "no instance 2"},
		{"negative", "/web/instances/-1/stop", http.StatusBadRequest, "index", "from 0"},
		{"not a number", "/web/instances/one/start", http.StatusBadRequest, "index", "from 0"},
		{"unknown action", "/web/instances/0/pause", http.StatusNotFound, "", "stop or start"},
		{"no such process", "/nope/instances/0/stop", http.StatusNotFound, "", "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, http.MethodPost, procs+tc.path, "")
			wantStatus(t, r, tc.code)
			e := decodeError(t, r)
			if !strings.Contains(e.Message, tc.msg) || tc.field != "" && (len(e.Details) != 1 || e.Details[0].Field != tc.field) {
				t.Fatalf("error %+v, want %q naming %q", e, tc.msg, tc.field)
			}
		})
	}
	ds := `{"apiVersion":"v4","kind":"daemonset","metadata":{"name":"ds","namespace":"inst"},"spec":{"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/inst/daemonsets", ds), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/inst/daemonsets/ds/instances/0/stop", ""), http.StatusUnprocessableEntity)
	// A deployment's application is the deployment's to stop.
	wantStatus(t, call(t, http.MethodPost, procs, controlledProcJSON("inst", "web-v1", 2)), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, procs+"/web-v1/instances/0/stop", ""), http.StatusLocked)

	other := otherNamespaceToken(t, url)
	wantStatus(t, callAs(t, "", http.MethodPost, procs+"/web/instances/0/stop", "", other), http.StatusForbidden)
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	wantStatus(t, callAs(t, "", http.MethodPost, procs+"/web/instances/0/stop", "", ro), http.StatusForbidden)
	if got := storedStopped(t, url, "processes", "web"); len(got) != 0 {
		t.Fatalf("a refused stop wrote stoppedInstances %v", got)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/other/processes", procJSON("other", "web", 2)), http.StatusCreated)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/other/processes/web/instances/0/stop", "", other), http.StatusAccepted)
}

// An applied list is checked against the count, naming the field.
func TestStoppedInstancesValidated(t *testing.T) {
	url := newTestServer(t, Config{})
	doc := strings.Replace(procJSON("inst", "web", 2), `"instance":2`, `"instance":2,"stoppedInstances":[1,2,1]`, 1)
	r := call(t, http.MethodPost, url+"/v1/namespaces/inst/processes", doc)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	e := decodeError(t, r)
	var fields []string
	for _, d := range e.Details {
		fields = append(fields, d.Field)
	}
	if !slices.Equal(fields, []string{"spec.stoppedInstances[1]", "spec.stoppedInstances[2]"}) {
		t.Fatalf("details %+v", e.Details)
	}
}
