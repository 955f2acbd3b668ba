package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/deployd"
	"github.com/berthhq/berth/internal/httpapi"
)

// Every route says what it needs: a user's right, or one of the other ways in, and the
// routes that need no user right are exactly these (a route made open by mistake fails).
func TestEveryRouteHasAccess(t *testing.T) {
	srv, _ := newTestServerOf(t, Config{PackagesDir: t.TempDir()})
	notUser := map[string]string{
		"GET /healthz": httpapi.GuardOpen, "GET /readyz": httpapi.GuardOpen, "GET /packages/": httpapi.GuardOpen, "/": httpapi.GuardOpen,
		"GET /ui/": httpapi.GuardOpen, "GET /ui": httpapi.GuardOpen, "GET /{$}": httpapi.GuardOpen,
		"POST /v1/agent/certificate":                  httpapi.GuardOpen,
		"POST /v1/agent/certificate/renew":            httpapi.GuardNode,
		"POST /v1/agent/register":                     httpapi.GuardNode,
		"PUT /v1/agent/nodes/{name}/heartbeat":        httpapi.GuardOwnNode,
		"POST /v1/agent/nodes/{name}/heartbeats":      httpapi.GuardOwnNode,
		"GET /v1/agent/nodes/{name}/taskgroups":       httpapi.GuardOwnNode,
		"POST /v1/agent/nodes/{name}/report":          httpapi.GuardOwnNode,
		"POST /v1/agent/nodes/{name}/statuses":        httpapi.GuardOwnNode,
		"POST /v1/agent/nodes/{name}/events":          httpapi.GuardOwnNode,
		"PUT /v1/agent/nodes/{name}/busyports":        httpapi.GuardOwnNode,
		"PUT /v1/agent/nodes/{name}/revocable":        httpapi.GuardOwnNode,
		"PUT /v1/agent/nodes/{name}/csiplugins":       httpapi.GuardOwnNode,
		"PUT /v1/agent/taskgroups/{ns}/{name}/status": httpapi.GuardNode,
		"GET /v1/agent/configmaps/{ns}/{name}":        httpapi.GuardNode,
		"GET /v1/agent/secrets/{ns}/{name}":           httpapi.GuardNode,
		"GET /v1/agent/catalog":                       httpapi.GuardNode,
		"POST /v1/agent/volumes/claim":                httpapi.GuardNode,
		"POST /v1/agent/volumes/release":              httpapi.GuardNode,
		"PUT /v1/agent/artifacts":                     httpapi.GuardNode,
		"GET /v1/agent/artifacts":                     httpapi.GuardNode,
		"GET /v1/artifacts/blobs/{digest}":            httpapi.GuardServer,
		"POST /v1/cluster/members":                    httpapi.GuardServerJoin,
		"POST /v1/apply":                              httpapi.GuardAnyUser, "POST /v1/plan": httpapi.GuardAnyUser,
		"GET /v1/priorityclasses": httpapi.GuardAnyUser, "GET /v1/priorityclasses/{name}": httpapi.GuardAnyUser, // every writer picks a class
		"GET /v1/acl/whoami": httpapi.GuardAnyUser, "POST /v1/acl/can-i": httpapi.GuardAnyUser, "GET /v1/namespaces": httpapi.GuardAnyUser,
		bcs.DriverPrefix + "/": httpapi.GuardFrontDoor, bcs.GatewayPrefix + "/": httpapi.GuardFrontDoor, bcs.StoragePrefix + "/": httpapi.GuardFrontDoor, deployd.Prefix: httpapi.GuardFrontDoor,
	}
	for _, p := range srv.mux.Patterns() {
		a, ok := srv.mux.Access(p)
		switch {
		case !ok || a.Guard == "":
			t.Errorf("route %q has no access rule", p)
		case a.Guard == httpapi.GuardUser && a.Perm == nil:
			t.Errorf("route %q needs a user right and names none", p)
		case a.Guard != httpapi.GuardUser && notUser[p] != a.Guard:
			t.Errorf("route %q is %s, want %q", p, a.Guard, notUser[p])
		case a.Guard == httpapi.GuardUser && notUser[p] != "":
			t.Errorf("route %q needs a user right, want %s", p, notUser[p])
		}
		delete(notUser, p)
	}
	for p := range notUser {
		t.Errorf("%q is not a route", p)
	}
}

// putPolicy stores a policy through the API and returns a token carrying it.
func tokenWithPolicy(t *testing.T, url, doc string, policy string, ttl string) string {
	t.Helper()
	wantStatus(t, call(t, http.MethodPut, url+"/v1/acl/policies/"+policy, doc), http.StatusOK)
	body, _ := json.Marshal(v4.ACLTokenRequest{Name: "t", Policies: []string{policy}, TTL: ttl})
	r := call(t, http.MethodPost, url+"/v1/acl/tokens", string(body))
	wantStatus(t, r, http.StatusCreated)
	var info v4.ACLTokenInfo
	if err := json.Unmarshal(r.body, &info); err != nil {
		t.Fatal(err)
	}
	return info.Secret
}

const readOnly = `kind: acl-policy
metadata: {name: readonly}
rules:
  - namespaces: ["*"]
    kinds: ["*"]
    verbs: [read]
`

// A read-only token reads, and cannot write, scale, exec, read logs or read secrets; each
// refusal names the right it lacks. A token without policies for a namespace gets nothing
// there.
func TestReadOnlyToken(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("ro", "web", 1)), http.StatusOK)
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"ro"},"datas":{"k":{"content":"c2VjcmV0"}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ro/secrets", secret), http.StatusCreated)
	putTaskGroup(t, "ro", "0.web.ro.c.1", "n1", nil)
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")

	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/namespaces/ro/processes/web", ""},
		{http.MethodGet, "/v1/processes", ""},
		{http.MethodGet, "/v1/events?namespace=ro", ""},
		{http.MethodPost, "/v1/plan", procJSON("ro", "web", 2)},
	} {
		if r := callAs(t, "", c.method, url+c.path, c.body, ro); r.code != http.StatusOK {
			t.Errorf("read-only %s %s: %d %s", c.method, c.path, r.code, r.body)
		}
	}
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/v1/apply", procJSON("ro", "web", 2), "may not write process in namespace ro"},
		{http.MethodDelete, "/v1/namespaces/ro/processes/web", "", "may not write process in namespace ro"},
		{http.MethodPost, "/v1/namespaces/ro/processes/web/scale", `{"instance":2}`, "may not scale process"},
		{http.MethodPost, "/v1/namespaces/ro/taskgroups/0.web.ro.c.1/exec?cmd=id", "", "may not run commands in task group"},
		{http.MethodGet, "/v1/namespaces/ro/taskgroups/0.web.ro.c.1/logs", "", "may not read the logs of task group"},
		{http.MethodGet, "/v1/namespaces/ro/secrets/pw", "", "may not read secret in namespace ro"},
		{http.MethodGet, "/v1/secrets", "", "may not read secret in every namespace"},
		{http.MethodPost, "/v1/jointokens", `{}`, "may not administer the cluster"},
		{http.MethodPost, "/v1/acl/tokens", `{"management":true}`, "may not administer the cluster"},
		{http.MethodPatch, "/v1/nodes/n1", `{}`, "may not write node"},
		{http.MethodGet, "/v1/debug/pprof/heap", "", "may not administer the cluster"},
	} {
		r := callAs(t, "", c.method, url+c.path, c.body, ro)
		wantStatus(t, r, http.StatusForbidden)
		if msg := decodeError(t, r).Message; !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, msg, c.want)
		}
	}
	// whoami and can-i answer for the token.
	r := callAs(t, "", http.MethodGet, url+"/v1/acl/whoami", "", ro)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"policies":["readonly"]`) {
		t.Fatalf("whoami: %s", r.body)
	}
	for _, c := range []struct {
		q    string
		want bool
	}{
		{`{"verb":"read","kind":"process","namespace":"ro"}`, true},
		{`{"verb":"read","kind":"secret","namespace":"ro"}`, false},
		{`{"verb":"exec","kind":"taskgroup","namespace":"ro"}`, false},
		{`{"verb":"read","kind":"node"}`, false}, // the cluster's kinds are named, never globbed
	} {
		r := callAs(t, "", http.MethodPost, url+"/v1/acl/can-i", c.q, ro)
		var ans v4.CanI
		if err := json.Unmarshal(r.body, &ans); err != nil || ans.Allowed != c.want {
			t.Errorf("can-i %s: %s, want %v", c.q, r.body, c.want)
		}
	}
}

// Without a token nothing is allowed (401 saying what to do), unless a policy named
// anonymous grants it; a revoked, expired, unknown or malformed token is a 401.
func TestAnonymousAndBadTokens(t *testing.T) {
	url := newTestServer(t, Config{})
	r := callAs(t, "", http.MethodGet, url+"/v1/namespaces/pub/configmaps", "", anonymous)
	wantStatus(t, r, http.StatusUnauthorized)
	if msg := decodeError(t, r).Message; !strings.Contains(msg, "no token") || !strings.Contains(msg, "BERTH_TOKEN") {
		t.Fatalf("anonymous: %s", msg)
	}
	// Probes and packages stay open.
	if r := callAs(t, "", http.MethodGet, url+"/healthz", "", anonymous); r.code != http.StatusOK {
		t.Fatalf("healthz: %d", r.code)
	}
	wantStatus(t, call(t, http.MethodPut, url+"/v1/acl/policies/anonymous", `kind: acl-policy
metadata: {name: anonymous}
rules: [{namespaces: [pub], kinds: [configmap], verbs: [read]}]
`), http.StatusOK)
	if r := callAs(t, "", http.MethodGet, url+"/v1/namespaces/pub/configmaps", "", anonymous); r.code != http.StatusOK {
		t.Fatalf("anonymous read granted by the anonymous policy: %d %s", r.code, r.body)
	}
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/other/configmaps", "", anonymous), http.StatusUnauthorized)

	// A policy document is bounded (a cluster keeps up to 1,000 of them).
	huge := "kind: acl-policy\nmetadata: {name: huge, description: \"" + strings.Repeat("x", 70000) + "\"}\nrules: []\n"
	wantStatus(t, call(t, http.MethodPut, url+"/v1/acl/policies/huge", huge), http.StatusRequestEntityTooLarge)

	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	short := tokenWithPolicy(t, url, readOnly, "readonly", "1s")
	id := strings.SplitN(strings.TrimPrefix(ro, "berth-acl-"), ".", 2)[0]
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/acl/tokens/berth-acl-"+id, ""), http.StatusNoContent)
	time.Sleep(1100 * time.Millisecond)
	for _, c := range []struct{ token, want string }{
		{ro, "unknown or revoked"},
		{short, "expired"},
		{wrongLast(ro), "unknown or revoked"},
		{"berth-acl-zzzzzz.0123456789abcdef", "unknown or revoked"},
		{"berth-abcdef.0123456789abcdef", "a join token is not a user's token"},
		{"hunter2", "not a berth token"},
	} {
		r := callAs(t, "", http.MethodGet, url+"/v1/namespaces/pub/configmaps", "", c.token)
		wantStatus(t, r, http.StatusUnauthorized)
		if msg := decodeError(t, r).Message; !strings.Contains(msg, c.want) || strings.Contains(msg, "0123456789abcdef") {
			t.Errorf("token %.20q: %q, want %q without the secret", c.token, msg, c.want)
		}
	}
}

// A workload's privileges are rights of their own: a token that may write processes
// cannot run one as root, nor a container with host networking, unless a rule grants
// that privilege; the refusal names the field. The management token may.
func TestWorkloadPrivilege(t *testing.T) {
	url := newTestServer(t, Config{})
	deployer := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: deployer}
rules:
  - {namespaces: ["pv"], kinds: ["*"], verbs: [read, write]}
`, "deployer", "")
	root := strings.Replace(procJSON("pv", "web", 1), `"procName":"web"`, `"procName":"web","user":"root"`, 1)
	hostNet := `{"apiVersion":"v4","kind":"application","metadata":{"name":"app","namespace":"pv"},"spec":{"instance":1,"template":{"spec":{"networkMode":"HOST","containers":[{"image":"busybox","privileged":true}]}}}}`
	for _, c := range []struct{ method, path, body, field, priv string }{
		{http.MethodPost, "/v1/apply", root, "spec.template.spec.processes[0].user", "root"},
		{http.MethodPost, "/v1/namespaces/pv/processes", root, "spec.template.spec.processes[0].user", "root"},
		{http.MethodPost, "/v1/apply", hostNet, "spec.template.spec.networkMode", "host-network"},
	} {
		r := callAs(t, "", c.method, url+c.path, c.body, deployer)
		wantStatus(t, r, http.StatusForbidden)
		e := decodeError(t, r)
		if len(e.Details) == 0 || e.Details[0].Field != c.field || !strings.Contains(e.Message, `privilege "`+c.priv+`"`) {
			t.Errorf("%s %s: %+v", c.method, c.path, e)
		}
	}
	// A process without a user runs as its agent's unprivileged default user: it needs
	// nothing, and neither does one with a user other than root.
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", procJSON("pv", "web", 1), deployer), http.StatusOK)
	nobody := strings.Replace(procJSON("pv", "web", 1), `"procName":"web"`, `"procName":"web","user":"nobody"`, 1)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", nobody, deployer), http.StatusOK)
	// An update cannot add the privilege either.
	r := callAs(t, "", http.MethodPut, url+"/v1/namespaces/pv/processes/web", root, deployer)
	wantStatus(t, r, http.StatusForbidden)

	infra := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: infra}
rules:
  - {namespaces: ["pv"], kinds: [process], verbs: [write], privileges: [root]}
`, "infra", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", root, infra), http.StatusOK)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", hostNet, infra), http.StatusForbidden)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", hostNet), http.StatusOK) // management
}

// Writes, secret reads, exec and logs are audited, allowed or refused, with who did
// them; plain reads are not.
func TestAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	url := newTestServer(t, Config{AuditLog: log})
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("au", "web", 1)), http.StatusOK)
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"au"},"datas":{"k":{"content":"c2VjcmV0"}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/au/secrets", secret), http.StatusCreated)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/au/secrets/pw", ""), http.StatusOK)
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/au/secrets/pw", "", ro), http.StatusForbidden)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/au/taskgroups/x/exec?cmd=id", "", ro), http.StatusForbidden)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/au/processes/web", ""), http.StatusOK) // not audited

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if strings.Contains(e.Path, "/v1/acl/") {
			continue // the test's own policy and token
		}
		who := "admin"
		if strings.Contains(e.Who, "(t)") {
			who = "reader"
		}
		got = append(got, fmt.Sprintf("%s %s %s %s/%s %d", who, e.Verb, e.Kind, e.Namespace, e.Name, e.Status))
	}
	want := []string{
		"admin write process au/web 200",
		"admin write secret au/pw 201",
		"admin read secret au/pw 200",
		"reader read secret au/pw 403",
		"reader exec taskgroup au/x 403",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(string(data), "c2VjcmV0") {
		t.Fatal("the audit log holds a secret value")
	}
}
