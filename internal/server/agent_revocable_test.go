package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func revocableProc(ns, name, tier string) string {
	return strings.Replace(procJSON(ns, name, 1), `"spec":{"instance":1,`, `"spec":{"tier":"`+tier+`","instance":1,`, 1)
}

// Only a node's own agent reports what it lends (the bound is its flag); a tenant's token
// reaches neither that route nor another namespace's workloads, and spec.tier is checked.
func TestRevocableReportAndTier(t *testing.T) {
	l := newNodeListRoute(t, "revocable")
	body := `{"time":"2026-11-30T12:00:00Z","usedCPU":0.5,"usedMemoryMB":100,"revocableCPU":0,"revocableMemoryMB":0,"maxFraction":0.25,"margin":0.1}`
	wantStatus(t, l.put("n1", body), http.StatusNoContent)
	if r := l.stored().Status.Revocable; r == nil || r.MaxFraction != 0.25 || r.UsedMemoryMB != 100 {
		t.Fatalf("stored %+v", r)
	}
	before := revision(t, context.Background())
	wantStatus(t, l.put("n1", body), http.StatusNoContent)
	if after := revision(t, context.Background()); after != before {
		t.Errorf("the same report moved the revision from %d to %d", before, after)
	}
	wantStatus(t, l.putAs("n1", "n2", body), http.StatusForbidden)
	r := l.put("n1", strings.Replace(body, `"maxFraction":0.25`, `"maxFraction":2`, 1))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "maxFraction" {
		t.Errorf("%+v, want the field maxFraction", e)
	}

	tenant := tokenWithPolicy(t, l.url, teamAPolicy, "team-a", "")
	as := func(method, path, body string) response { return callAs(t, "", method, l.url+path, body, tenant) }
	// A token is no node certificate: it cannot raise what a node lends.
	wantStatus(t, as(http.MethodPut, "/v1/agent/nodes/n1/revocable", strings.Replace(body, "0.25", "1", 1)), http.StatusUnauthorized)
	if r := l.stored().Status.Revocable; r.MaxFraction != 0.25 {
		t.Errorf("the bound moved to %v", r.MaxFraction)
	}
	// Nor can it mark another namespace's work revocable, through either route.
	for _, path := range []string{"/v1/namespaces/team-c/processes", "/v1/apply"} {
		wantStatus(t, as(http.MethodPost, path, revocableProc("team-c", "p", v4.TierRevocable)), http.StatusForbidden)
	}
	r = as(http.MethodPost, "/v1/namespaces/team-a/processes", revocableProc("team-a", "p", "cheap"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "spec.tier" {
		t.Errorf("%+v, want the field spec.tier", e)
	}
	wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/processes", revocableProc("team-a", "p", v4.TierRevocable)), http.StatusCreated)
}
