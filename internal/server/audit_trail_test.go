package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/deployd"
)

// auditedServer serves a fresh server writing its audit log to a file of the test.
func auditedServer(t *testing.T) (*Server, string, *audit.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	srv, url := newTestServerOf(t, Config{AuditLog: log})
	return srv, url, log, path
}

// auditLines reads the log's entries from offset, skipping the test's own ACL setup.
func auditLines(t *testing.T, path string, offset int) ([]audit.Entry, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Entry
	for _, line := range strings.Split(strings.TrimSpace(string(data[offset:])), "\n") {
		if line == "" {
			continue
		}
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if !strings.HasPrefix(e.Path, "/v1/acl/") {
			out = append(out, e)
		}
	}
	return out, len(data)
}

// Every write's audit line names the kind, namespace and name of its object: a create
// (the name is in the body), each document of an apply (allowed or refused), a BCS or
// deployd call (with the front door's request); an exec line has its command.
func TestAuditNamesObjects(t *testing.T) {
	_, url, _, path := auditedServer(t)
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	putTaskGroup(t, "au", "0.web.au.c.1", "n1", nil)
	stream := procJSON("au", "web", 1) + "\n" + cmJSON("au", "cfg", "eA==")
	_, offset := auditLines(t, path, 0)
	cases := []struct {
		name        string
		method, url string
		body, token string
		header      http.Header
		want        []string // verb kind namespace/name status [command] [via]
	}{
		{"multi-document apply", http.MethodPost, "/v1/apply", stream, "", nil,
			[]string{"write process au/web 200", "write configmap au/cfg 200"}},
		{"apply refused", http.MethodPost, "/v1/apply", stream, ro, nil,
			[]string{"write process au/web 403", "write configmap au/cfg 403"}},
		{"create", http.MethodPost, "/v1/namespaces/au/configmaps", cmJSON("au", "other", "eQ=="), "", nil,
			[]string{"write configmap au/other 201"}},
		{"delete", http.MethodDelete, "/v1/namespaces/au/configmaps/other", "", "", nil,
			[]string{"write configmap au/other 200"}},
		{"plan", http.MethodPost, "/v1/plan", procJSON("au", "web", 2), "", nil,
			[]string{"read process au/web 200"}},
		{"exec refused", http.MethodPost, "/v1/namespaces/au/taskgroups/0.web.au.c.1/exec?cmd=sh&cmd=-c&cmd=cat+/etc/passwd", "", ro, nil,
			[]string{"exec taskgroup au/0.web.au.c.1 403 [sh -c cat /etc/passwd]"}},
		{"BCS create", http.MethodPost, bcs.GatewayPrefix + "/namespaces/au/processes", procJSON("au", "bcs", 1), "",
			http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Content-Type": {"application/json"}},
			[]string{"write process au/bcs 201 via POST " + bcs.GatewayPrefix + "/namespaces/au/processes"}},
		{"BCS delete", http.MethodDelete, bcs.GatewayPrefix + "/namespaces/au/processes/bcs", "", "",
			http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}},
			[]string{"write process au/bcs 200 via DELETE " + bcs.GatewayPrefix + "/namespaces/au/processes/bcs"}},
		{"deployd notify", http.MethodPost, "/api/notifies?callback=http://127.0.0.1:9/cb", "", "", nil,
			[]string{"write notify " + deployd.Namespace + "/" + deploydNotifyName("http://127.0.0.1:9/cb") + " 201 via POST /api/notifies"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			callWith(t, "", tc.method, url+tc.url, tc.body, tc.token, tc.header)
			var entries []audit.Entry
			entries, offset = auditLines(t, path, offset)
			var got []string
			for _, e := range entries {
				line := fmt.Sprintf("%s %s %s/%s %d", e.Verb, e.Kind, e.Namespace, e.Name, e.Status)
				if len(e.Command) > 0 {
					line += fmt.Sprintf(" %v", e.Command)
				}
				if e.Via != "" {
					line += " via " + e.Via
				}
				got = append(got, line)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("audit lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// deploydNotifyName is the name deployd's API gives a callback's notify object.
func deploydNotifyName(callback string) string {
	sum := sha256.Sum256([]byte(callback))
	return "callback-" + hex.EncodeToString(sum[:6])
}

// Failed authentications are slowed per source and summed up in the audit log: past the
// burst, a source's guesses get 429 with Retry-After before their token is checked, while
// a token that worked from the same address goes on working; the log holds one line for
// the source's minute, not one per try.
func TestAuthFailuresSlowedAndAudited(t *testing.T) {
	srv, url, log, path := auditedServer(t)
	srv.authLimit.rate, srv.authLimit.burst = 0.5, 3
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/lim/configmaps", ""), http.StatusOK) // the admin's token, accepted here
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	_, offset := auditLines(t, path, 0)
	guess := func(i int) string { return fmt.Sprintf("berth-acl-zz%04d.0123456789abcdef", i) }
	cases := []struct {
		name  string
		token string
		want  int
	}{
		{"guess 1", guess(1), http.StatusUnauthorized},
		{"guess 2", "Basic dXNlcjpwdw==", http.StatusUnauthorized}, // a malformed header is a failure too
		{"guess 3", guess(3), http.StatusUnauthorized},
		{"guess 4: throttled", guess(4), http.StatusTooManyRequests},
		{"guess 5: throttled", guess(5), http.StatusTooManyRequests},
		{"the admin's token, proven here", adminToken, http.StatusOK},
		{"a valid token new to this address waits too", ro, http.StatusTooManyRequests},
		{"anonymous: nothing to guess", anonymous, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			if strings.HasPrefix(tc.token, "Basic ") {
				r = callWith(t, "", http.MethodGet, url+"/v1/namespaces/lim/configmaps", "", "", http.Header{"Authorization": {tc.token}})
			} else {
				r = callAs(t, "", http.MethodGet, url+"/v1/namespaces/lim/configmaps", "", tc.token)
			}
			wantStatus(t, r, tc.want)
			if tc.want == http.StatusTooManyRequests {
				if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
					t.Fatalf("Retry-After %q", ra)
				}
			}
		})
	}
	// Another source is not held back: the limiter knows sources apart.
	if _, ok := srv.authLimit.admit("10.9.9.9", "Bearer "+guess(9)); !ok {
		t.Fatal("another source was throttled")
	}
	if err := log.Flush(time.Now().Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	entries, _ := auditLines(t, path, offset)
	var failures []audit.Entry
	for _, e := range entries {
		if e.Who == audit.WhoUnauthenticated {
			failures = append(failures, e)
		}
	}
	if len(failures) != 1 {
		t.Fatalf("%d lines of failed authentications, want 1: %+v", len(failures), failures)
	}
	f := failures[0]
	if f.Remote != "127.0.0.1" || f.Count != 6 || f.Throttled != 3 || f.Verb != audit.VerbAuthenticate ||
		strings.Join(f.Tokens, " ") != "berth-acl-zz0001 berth-acl-zz0003 berth-acl-zz0004 berth-acl-zz0005 "+strings.SplitN(ro, ".", 2)[0] {
		t.Fatalf("failures line %+v", f)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "0123456789abcdef") {
		t.Fatal("the audit log holds a token's secret")
	}
}
