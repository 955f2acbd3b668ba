package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// procWithClass is procJSON naming a priority class (none when class is "") and, when
// prio is not empty, a priority.
func procWithClass(ns, name, class, prio string) string {
	doc := procJSON(ns, name, 1)
	extra := ""
	if class != "" {
		extra += `"priorityClassName":"` + class + `",`
	}
	if prio != "" {
		extra += `"priority":` + prio + `,`
	}
	return strings.Replace(doc, `"spec":{"instance":1,`, `"spec":{`+extra+`"instance":1,`, 1)
}

func storedPriority(t *testing.T, ns, name string) (int, string) {
	t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindProcess, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	s := o.(*v4.Process).Spec.Scheduling
	if s.Priority == nil {
		t.Fatalf("%s/%s: no priority recorded", ns, name)
	}
	return *s.Priority, s.PreemptionPolicy
}

// Priority classes are written by administrators only and read by everyone; a tenant
// names the classes at or below the default, needs the privilege "priority" above it, and
// never sets a priority of its own or uses a system class.
func TestPriorityClassesAndAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, teamAPolicy, "team-a", "")
	as := func(method, path, body string) response { return callAs(t, "", method, url+path, body, tenant) }

	for name, body := range map[string]string{
		"normal": `{"value":0,"globalDefault":true,"description":"everyone"}`,
		"batch":  `{"value":-10,"preemptionPolicy":"Never"}`,
		"high":   `{"value":1000}`,
		"system": `{"value":2000000000}`,
	} {
		wantStatus(t, call(t, http.MethodPut, url+"/v1/priorityclasses/"+name, body), http.StatusOK)
	}
	// Only an administrator writes classes; a second global default is refused.
	wantStatus(t, as(http.MethodPut, "/v1/priorityclasses/mine", `{"value":999999}`), http.StatusForbidden)
	wantStatus(t, as(http.MethodPut, "/v1/priorityclasses/high", `{"value":1}`), http.StatusForbidden)
	wantStatus(t, as(http.MethodDelete, "/v1/priorityclasses/high", ""), http.StatusForbidden)
	wantStatus(t, call(t, http.MethodPut, url+"/v1/priorityclasses/other", `{"value":5,"globalDefault":true}`), http.StatusConflict)
	for body, field := range map[string]string{
		`{"value":1,"preemptionPolicy":"Sometimes"}`: "preemptionPolicy",
		`{"value":2000000001}`:                       "value",
		`{"metadata":{"name":"else"},"value":1}`:     "metadata.name",
	} {
		r := call(t, http.MethodPut, url+"/v1/priorityclasses/bad", body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != field {
			t.Errorf("%s: %+v, want the field %s", body, e, field)
		}
	}
	// Everyone reads them.
	r := as(http.MethodGet, "/v1/priorityclasses", "")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"high"`) || !strings.Contains(string(r.body), `"globalDefault":true`) {
		t.Errorf("list: %s", r.body)
	}

	for _, c := range []struct {
		what, class, prio string
		code              int
		field             string
	}{
		{"an unknown class", "nope", "", http.StatusUnprocessableEntity, "spec.priorityClassName"},
		{"a class above the default", "high", "", http.StatusForbidden, "spec.priorityClassName"},
		{"a system class", "system", "", http.StatusForbidden, "spec.priorityClassName"},
		{"a priority of its own", "", "500", http.StatusForbidden, "spec.priority"},
		{"a priority out of range", "", "3000000000", http.StatusUnprocessableEntity, "spec.priority"},
	} {
		for _, path := range []string{"/v1/namespaces/team-a/processes", "/v1/apply"} {
			r := as(http.MethodPost, path, procWithClass("team-a", "p", c.class, c.prio))
			wantStatus(t, r, c.code)
			if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != c.field {
				t.Errorf("%s through %s: %+v, want the field %s", c.what, path, e, c.field)
			}
		}
	}
	// At or below the default: admitted, the value and policy recorded.
	wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/processes", procWithClass("team-a", "b", "batch", "")), http.StatusCreated)
	if v, pol := storedPriority(t, "team-a", "b"); v != -10 || pol != v4.PreemptNever {
		t.Errorf("batch: %d %s", v, pol)
	}
	wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/processes", procWithClass("team-a", "d", "", "")), http.StatusCreated)
	if v, pol := storedPriority(t, "team-a", "d"); v != 0 || pol != v4.PreemptLowerPriority {
		t.Errorf("default: %d %s", v, pol)
	}
	// The privilege "priority" lets a namespace's writer name a higher class.
	urgent := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: urgent}
rules:
  - {namespaces: [team-a], kinds: ["*"], verbs: [read, write], privileges: [priority]}
`, "urgent", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", procWithClass("team-a", "h", "high", ""), urgent), http.StatusOK)
	if v, _ := storedPriority(t, "team-a", "h"); v != 1000 {
		t.Errorf("high: %d", v)
	}
	// ... but not into another namespace, nor a system class.
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", procWithClass("team-b", "h", "high", ""), urgent), http.StatusForbidden)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", procWithClass("team-a", "s", "system", ""), urgent), http.StatusForbidden)
	// An administrator sets any priority.
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procWithClass("team-a", "a", "", "42")), http.StatusOK)
	if v, _ := storedPriority(t, "team-a", "a"); v != 42 {
		t.Errorf("admin: %d", v)
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/priorityclasses/high", ""), http.StatusNoContent)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/priorityclasses/high", ""), http.StatusNotFound)
}
