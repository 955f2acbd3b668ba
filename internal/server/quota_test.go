package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/store"
)

const teamAPolicy = `kind: acl-policy
metadata: {name: team-a}
rules:
  - namespaces: [team-a, team-b]
    kinds: ["*"]
    verbs: [read, write]
`

func decodeQuota(t *testing.T, r response) store.NamespaceQuota {
	t.Helper()
	var q store.NamespaceQuota
	if err := json.Unmarshal(r.body, &q); err != nil {
		t.Fatalf("not a namespace quota: %s (%v)", r.body, err)
	}
	return q
}

// A tenant's token fills its namespace to the limit an administrator set: the next write
// (create, apply, replace that grows) is refused with 403 naming the namespace and the
// limit, and stores nothing; another namespace still takes writes; a delete frees room.
// The tenant reads its usage but cannot change its limits.
func TestNamespaceLimitsRefuseWritesPastThem(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, teamAPolicy, "team-a", "")
	as := func(method, path, body string) response {
		return callAs(t, "", method, url+path, body, tenant)
	}
	// Only an administrator sets limits.
	wantStatus(t, as(http.MethodPut, "/v1/namespaces/team-a/quota", `{"objects": 100000}`), http.StatusForbidden)
	r := call(t, http.MethodPut, url+"/v1/namespaces/team-a/quota", `{"objects": 3}`)
	wantStatus(t, r, http.StatusOK)
	if q := decodeQuota(t, r); q.Limits.Objects != 3 || q.Default || q.Usage.Objects != 0 {
		t.Fatalf("set: %+v", q)
	}
	for i := range 3 {
		wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/configmaps", cmJSON("team-a", fmt.Sprintf("c%d", i), "eA==")), http.StatusCreated)
	}
	want := "namespace team-a holds 3 objects, its limit (3)"
	for _, c := range []struct{ what, method, path, body string }{
		{"create", http.MethodPost, "/v1/namespaces/team-a/configmaps", cmJSON("team-a", "c3", "eA==")},
		{"apply", http.MethodPost, "/v1/apply", cmJSON("team-a", "c0", "eQ==") + "\n" + cmJSON("team-a", "c4", "eA==")},
	} {
		r := as(c.method, c.path, c.body)
		wantStatus(t, r, http.StatusForbidden)
		if e := decodeError(t, r); !strings.Contains(e.Message, want) {
			t.Errorf("%s: %q, want %q", c.what, e.Message, want)
		}
	}
	wantStatus(t, as(http.MethodGet, "/v1/namespaces/team-a/configmaps/c3", ""), http.StatusNotFound)
	if r := as(http.MethodGet, "/v1/namespaces/team-a/configmaps/c0/definition", ""); !strings.Contains(string(r.body), "eA==") {
		t.Errorf("the refused apply changed c0: %s", r.body)
	}
	// Other namespaces write on.
	wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-b/configmaps", cmJSON("team-b", "c0", "eA==")), http.StatusCreated)
	// The tenant sees its usage; a delete frees room.
	r = as(http.MethodGet, "/v1/namespaces/team-a/quota", "")
	wantStatus(t, r, http.StatusOK)
	if q := decodeQuota(t, r); q.Usage.Objects != 3 || q.Limits.Objects != 3 || q.Usage.Bytes == 0 {
		t.Fatalf("usage: %+v", q)
	}
	wantStatus(t, as(http.MethodDelete, "/v1/namespaces/team-a/configmaps/c1", ""), http.StatusOK)
	wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/configmaps", cmJSON("team-a", "c3", "eA==")), http.StatusCreated)
	// Back to the defaults: 10,000 objects, an eighth of the etcd quota.
	r = call(t, http.MethodDelete, url+"/v1/namespaces/team-a/quota", "")
	wantStatus(t, r, http.StatusOK)
	if q := decodeQuota(t, r); !q.Default || q.Limits.Objects != store.DefaultNamespaceObjects || q.Usage.Objects != 3 {
		t.Fatalf("defaults: %+v", q)
	}
	wantStatus(t, as(http.MethodPost, "/v1/namespaces/team-a/configmaps", cmJSON("team-a", "c4", "eA==")), http.StatusCreated)
}

// The byte limit: a replacement that grows a full namespace is refused, one that
// shrinks it passes.
func TestNamespaceByteLimitRefusesGrowth(t *testing.T) {
	url := newTestServer(t, Config{})
	big := strings.Repeat("eHh4", 1000)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/team-c/configmaps", cmJSON("team-c", "big", big)), http.StatusCreated)
	r := call(t, http.MethodGet, url+"/v1/namespaces/team-c/quota", "")
	held := decodeQuota(t, r).Usage.Bytes
	wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/team-c/quota", fmt.Sprintf(`{"bytes": %d}`, held+100)), http.StatusOK)
	r = call(t, http.MethodPut, url+"/v1/namespaces/team-c/configmaps/big", cmJSON("team-c", "big", big+big))
	wantStatus(t, r, http.StatusForbidden)
	if e := decodeError(t, r); !strings.Contains(e.Message, "namespace team-c holds") || !strings.Contains(e.Message, "past its limit") {
		t.Errorf("message %q", e.Message)
	}
	wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/team-c/configmaps/big", cmJSON("team-c", "big", "eA==")), http.StatusOK)
}
