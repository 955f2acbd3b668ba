package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

const tenantNT = `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: [nt], kinds: ["*"], verbs: [read, write, logs, exec, scale]}
`

// readerNT may read task groups and events everywhere, and write in nt.
const readerNT = `kind: acl-policy
metadata: {name: reader}
rules:
  - {namespaces: [nt], kinds: ["*"], verbs: [write]}
  - {namespaces: ["*"], kinds: [taskgroup, event], verbs: [read]}
  - {kinds: [node], verbs: [read]}
`

func notifyJSON(name string, namespaces []string, events []string, annotations map[string]string) string {
	n := map[string]any{"apiVersion": "v4", "kind": "notify",
		"metadata": map[string]any{"name": name, "namespace": "nt", "annotations": annotations},
		"spec":     map[string]any{"url": "http://127.0.0.1:9/hook", "namespaces": namespaces, "events": events}}
	b, _ := json.Marshal(n)
	return string(b)
}

// tokenID is the berth-acl-<id> part of a token.
func tokenID(token string) string { return strings.SplitN(token, ".", 2)[0] }

// A notify may subscribe only to what its writer may read: namespaces other than its own
// need read on task groups and events there ("*": everywhere), node.lost read on nodes;
// else 403 naming the field, through every write route. The writer is recorded as the
// subscriber, over any value the body sends.
func TestNotifyAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	reader := tokenWithPolicy(t, url, readerNT, "reader", "")
	lain := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: lain}
rules:
  - {namespaces: [deployd], kinds: [notify], verbs: [read, write]}
`, "lain", "")
	forged := map[string]string{v4.NotifySubscriberAnnotation: "berth-acl-admin1", "team": "a"}
	cases := []struct {
		name       string
		token      string
		method     string
		path       string
		body       string
		want       int
		field      string // of the 403
		subscriber string // recorded on the stored notify
	}{
		{"own namespace", tenant, http.MethodPost, "/v1/namespaces/nt/notifies", notifyJSON("own", nil, nil, nil), http.StatusCreated, "", tenant},
		{"own namespace named", tenant, http.MethodPost, "/v1/apply", notifyJSON("named", []string{"nt"}, nil, nil), http.StatusOK, "", tenant},
		{"a forged subscriber is overwritten", tenant, http.MethodPost, "/v1/namespaces/nt/notifies", notifyJSON("forged", nil, nil, forged), http.StatusCreated, "", tenant},
		{"every namespace", tenant, http.MethodPost, "/v1/namespaces/nt/notifies", notifyJSON("all", []string{"*"}, nil, nil), http.StatusForbidden, "spec.namespaces[0]", ""},
		{"every namespace by apply", tenant, http.MethodPost, "/v1/apply", notifyJSON("all", []string{"*"}, nil, nil), http.StatusForbidden, "spec.namespaces[0]", ""},
		{"another namespace", tenant, http.MethodPost, "/v1/namespaces/nt/notifies", notifyJSON("two", []string{"nt", "other"}, nil, nil), http.StatusForbidden, "spec.namespaces[1]", ""},
		{"an update cannot widen it", tenant, http.MethodPut, "/v1/namespaces/nt/notifies/own", notifyJSON("own", []string{"other"}, nil, nil), http.StatusForbidden, "spec.namespaces[0]", ""},
		{"node events", tenant, http.MethodPost, "/v1/namespaces/nt/notifies", notifyJSON("nodes", nil, []string{v4.NotifyTaskGroupFailed, v4.NotifyNodeLost}, nil), http.StatusForbidden, "spec.events[1]", ""},
		{"deployd's callback is every namespace", lain, http.MethodPost, "/api/notifies?callback=http://127.0.0.1:9/cb", "", http.StatusForbidden, "", ""},
		{"a reader of every namespace", reader, http.MethodPost, "/v1/namespaces/nt/notifies", notifyJSON("wide", []string{"*"}, []string{v4.NotifyNodeLost}, nil), http.StatusCreated, "", reader},
		{"the management token", "", http.MethodPost, "/v1/apply", notifyJSON("admin", []string{"*"}, nil, forged), http.StatusOK, "", adminToken},
		{"an update takes the updater", reader, http.MethodPut, "/v1/namespaces/nt/notifies/own", notifyJSON("own", []string{"other"}, nil, nil), http.StatusOK, "", reader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := callAs(t, "", tc.method, url+tc.path, tc.body, tc.token)
			if r.code != tc.want {
				t.Fatalf("status %d, want %d: %s", r.code, tc.want, r.body)
			}
			if tc.want == http.StatusForbidden {
				if tc.field == "" { // deployd's own error shape
					if !strings.Contains(string(r.body), "may not subscribe") {
						t.Fatalf("refusal %s", r.body)
					}
					return
				}
				e := decodeError(t, r)
				if len(e.Details) != 1 || e.Details[0].Field != tc.field || !strings.HasPrefix(e.Message, tc.field+": ") || !strings.Contains(e.Message, "may not read") {
					t.Fatalf("refusal %+v, want the field %s", e, tc.field)
				}
				return
			}
			var name string
			var doc struct {
				Metadata v4.ObjectMeta `json:"metadata"`
			}
			json.Unmarshal([]byte(tc.body), &doc)
			name = doc.Metadata.Name
			if name == "" {
				name = "own"
			}
			got := call(t, http.MethodGet, url+"/v1/namespaces/nt/notifies/"+name, "")
			wantStatus(t, got, http.StatusOK)
			meta := objectMeta(t, got.body)
			if sub := meta.Annotations[v4.NotifySubscriberAnnotation]; sub != tokenID(tc.subscriber) {
				t.Fatalf("subscriber %q, want %q", sub, tokenID(tc.subscriber))
			}
			if tc.name == "a forged subscriber is overwritten" && meta.Annotations["team"] != "a" {
				t.Fatalf("other annotations lost: %v", meta.Annotations)
			}
		})
	}
	// Applying the same notify again with the same token changes nothing.
	r := callAs(t, "", http.MethodPost, url+"/v1/apply", notifyJSON("named", []string{"nt"}, nil, nil), tenant)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), fmt.Sprintf("%q", v4.ActionUnchanged)) {
		t.Fatalf("re-apply: %s", r.body)
	}
}
