package server

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/webhook"
)

// testHooks is a hook server in the test: what each path does is in serve.
type testHooks struct {
	url, bundle string
}

func newTestHooks(t testing.TB) *testHooks {
	t.Helper()
	ts := httptest.NewTLSServer(http.HandlerFunc(serveTestHook))
	t.Cleanup(ts.Close)
	bundle := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}))
	return &testHooks{url: ts.URL, bundle: bundle}
}

func serveTestHook(w http.ResponseWriter, r *http.Request) {
	var rv webhook.Review
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Request == nil {
		http.Error(w, "not a review", http.StatusBadRequest)
		return
	}
	req := rv.Request
	resp := &webhook.Response{UID: req.UID, Allowed: true}
	var obj struct {
		Metadata struct{ Labels map[string]string } `json:"metadata"`
		Spec     struct{ Instance int }             `json:"spec"`
	}
	_ = json.Unmarshal(req.Object, &obj)
	patch := func(p string) { resp.PatchType, resp.Patch = "JSONPatch", json.RawMessage(p) }
	switch r.URL.Path {
	case "/label":
		if obj.Metadata.Labels == nil {
			patch(`[{"op":"add","path":"/metadata/labels","value":{"team":"blue"}}]`)
		} else {
			patch(`[{"op":"add","path":"/metadata/labels/team","value":"blue"}]`)
		}
	case "/deny":
		if obj.Metadata.Labels["deny"] == "yes" || (req.SubResource == "scale" && obj.Spec.Instance > 5) {
			resp.Allowed, resp.Status = false, &webhook.Status{Message: "spec refused by policy", Code: 403}
		}
	case "/privileged":
		patch(`[{"op":"add","path":"/spec/template/spec/containers/0/privileged","value":true}]`)
	case "/rename":
		patch(`[{"op":"replace","path":"/metadata/name","value":"other"}]`)
	case "/big":
		w.Write([]byte(`{"response":{"uid":"` + req.UID + `","allowed":true},"pad":"`))
		w.Write([]byte(strings.Repeat("x", webhook.DefaultMaxResponse)))
		w.Write([]byte(`"}`))
		return
	case "/user":
		if req.UserInfo.Username == "" || len(req.UserInfo.Policies) == 0 && !req.UserInfo.Management {
			resp.Allowed, resp.Status = false, &webhook.Status{Message: "no user info"}
		}
	}
	json.NewEncoder(w).Encode(webhook.Review{APIVersion: rv.APIVersion, Kind: "AdmissionReview", Response: resp})
}

// hookConfig is a configuration of one hook at path, for the namespace ns.
func (h *testHooks) config(name, typ, path, ns, policy string) string {
	return fmt.Sprintf(`{"kind":"admissionwebhook","metadata":{"name":%q},"webhooks":[{"name":"hook.test","type":%q,`+
		`"clientConfig":{"url":%q,"caBundle":%q},"rules":[{"operations":["*"],"kinds":["*"]}],`+
		`"namespaceSelector":{"operator":"In","values":[%q]},"failurePolicy":%q,"timeoutSeconds":5}]}`,
		name, typ, h.url+path, h.bundle, ns, policy)
}

func appJSON(ns, name, labels string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"application","metadata":{"name":%q,"namespace":%q,"labels":{%s}},`+
		`"spec":{"instance":1,"template":{"spec":{"networkMode":"NONE","containers":[{"image":"busybox"}]}}}}`, name, ns, labels)
}

func putHook(t *testing.T, url, name, doc string) {
	t.Helper()
	r := call(t, http.MethodPut, url+"/v1/admissionwebhooks/"+name, doc)
	if r.code != http.StatusCreated && r.code != http.StatusOK {
		t.Fatalf("put %s: %d %s", name, r.code, r.body)
	}
}

func TestAdmissionWebhooks(t *testing.T) {
	url := newTestServer(t, Config{})
	hooks := newTestHooks(t)
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: ["wh-*"], kinds: ["*"], verbs: [read, write]}
`, "tenant", "")

	t.Run("a namespace's token cannot write or read configurations", func(t *testing.T) {
		doc := hooks.config("evil", "Mutating", "/label", "*", "Ignore")
		for _, m := range []string{http.MethodPut, http.MethodDelete} {
			wantStatus(t, callAs(t, "", m, url+"/v1/admissionwebhooks/evil", doc, tenant), http.StatusForbidden)
		}
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/admissionwebhooks", doc, tenant), http.StatusForbidden)
		wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/admissionwebhooks", "", tenant), http.StatusForbidden)
		// Nor through the object routes or an apply stream.
		r := callAs(t, "", http.MethodPost, url+"/v1/apply", doc, tenant)
		if r.code < 400 {
			t.Fatalf("apply of a configuration: %d %s", r.code, r.body)
		}
	})

	t.Run("bad configurations name the field", func(t *testing.T) {
		cases := []struct{ name, from, to, field string }{
			{"http", `"url":"https://`, `"url":"http://`, "webhooks[0].clientConfig.url"},
			{"own API", hooks.url, "https://127.0.0.1:7470", "webhooks[0].clientConfig.url"},
			{"own API by name", hooks.url, "https://localhost:7470", "webhooks[0].clientConfig.url"},
			{"timeout", `"timeoutSeconds":5`, `"timeoutSeconds":31`, "webhooks[0].timeoutSeconds"},
			{"policy", `"failurePolicy":"Fail"`, `"failurePolicy":"Maybe"`, "webhooks[0].failurePolicy"},
			{"operator", `"operator":"In"`, `"operator":"Near"`, "webhooks[0].namespaceSelector.operator"},
			{"kind", `"kinds":["*"]`, `"kinds":["rocket"]`, "webhooks[0].rules[0].kinds[0]"},
			{"caBundle", `"caBundle":"`, `"caBundle":"junk`, "webhooks[0].clientConfig.caBundle"},
		}
		for _, c := range cases {
			doc := strings.Replace(hooks.config("bad", "Validating", "/deny", "wh-x", "Fail"), c.from, c.to, 1)
			r := call(t, http.MethodPut, url+"/v1/admissionwebhooks/bad", doc)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != c.field {
				t.Errorf("%s: %+v, want field %s", c.name, e, c.field)
			}
		}
	})

	t.Run("mutating, validating, re-authorization and patch rules", func(t *testing.T) {
		putHook(t, url, "a-label", hooks.config("a-label", "Mutating", "/label", "wh-m", "Fail"))
		putHook(t, url, "b-deny", hooks.config("b-deny", "Validating", "/deny", "wh-m", "Fail"))
		r := callAs(t, "", http.MethodPost, url+"/v1/namespaces/wh-m/applications", appJSON("wh-m", "ok", ""), tenant)
		wantStatus(t, r, http.StatusCreated)
		if m := objectMeta(t, r.body); m.Labels["team"] != "blue" {
			t.Fatalf("labels %v, want team=blue from the mutating hook", m.Labels)
		}
		def := call(t, http.MethodGet, url+"/v1/namespaces/wh-m/applications/ok/definition", "")
		if !strings.Contains(string(def.body), `"team"`) {
			t.Fatalf("definition %s lacks the hook's label", def.body)
		}
		r = callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-m", "refused", `"deny":"yes"`), tenant)
		wantStatus(t, r, http.StatusForbidden)
		if e := decodeError(t, r); !strings.Contains(e.Message, "b-deny/hook.test") || !strings.Contains(e.Message, "spec refused by policy") {
			t.Fatalf("%+v, want the hook's name and message", e)
		}
		// Scale: the validating hook sees subResource scale and refuses more than 5.
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/wh-m/applications/ok/scale", `{"instances":6}`, tenant), http.StatusForbidden)
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/wh-m/applications/ok/scale", `{"instances":2}`, tenant), http.StatusAccepted)

		putHook(t, url, "c-priv", hooks.config("c-priv", "Mutating", "/privileged", "wh-p", "Fail"))
		r = callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-p", "priv", ""), tenant)
		wantStatus(t, r, http.StatusForbidden)
		if e := decodeError(t, r); !strings.Contains(e.Message, "privileged") || !strings.Contains(e.Message, "admission webhooks") {
			t.Fatalf("%+v, want the privilege the hook added refused", e)
		}
		wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", appJSON("wh-p", "priv", "")), http.StatusOK) // the administrator holds it

		putHook(t, url, "d-rename", hooks.config("d-rename", "Mutating", "/rename", "wh-r", "Ignore"))
		r = callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-r", "me", ""), tenant)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "metadata.name" {
			t.Fatalf("%+v, want metadata.name refused even under Ignore", e)
		}
	})

	t.Run("failure policies with the hook down, and bounded answers", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "https://" + ln.Addr().String()
		ln.Close()
		fail := strings.Replace(hooks.config("e-down", "Validating", "/deny", "wh-f", "Fail"), hooks.url, down, 1)
		putHook(t, url, "e-down", fail)
		r := callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-f", "x", ""), tenant)
		wantStatus(t, r, http.StatusBadGateway)
		if e := decodeError(t, r); !strings.Contains(e.Message, "e-down/hook.test") || !strings.Contains(e.Message, "failurePolicy is Fail") {
			t.Fatalf("%+v, want the hook named", e)
		}
		putHook(t, url, "e-down", strings.Replace(fail, `"failurePolicy":"Fail"`, `"failurePolicy":"Ignore"`, 1))
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-f", "x", ""), tenant), http.StatusOK)
		waitFor(t, "an AdmissionWebhookFailed event", func() bool {
			return strings.Contains(string(call(t, http.MethodGet, url+"/v1/events?namespace=wh-f", "").body), "AdmissionWebhookFailed")
		})
		m := call(t, http.MethodGet, url+"/metrics", "")
		if !strings.Contains(string(m.body), `berth_admission_webhook_calls_total{hook="e-down/hook.test",outcome="failed"}`) {
			t.Fatal("no failed call in the metrics")
		}
		putHook(t, url, "f-big", hooks.config("f-big", "Validating", "/big", "wh-b", "Fail"))
		r = callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-b", "x", ""), tenant)
		wantStatus(t, r, http.StatusBadGateway)
		if e := decodeError(t, r); !strings.Contains(e.Message, "larger than") {
			t.Fatalf("%+v, want the answer's bound", e)
		}
	})

	t.Run("the review carries the user", func(t *testing.T) {
		putHook(t, url, "g-user", hooks.config("g-user", "Validating", "/user", "wh-u", "Fail"))
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-u", "x", ""), tenant), http.StatusOK)
	})

	t.Run("configurations are listed and deleted", func(t *testing.T) {
		r := call(t, http.MethodGet, url+"/v1/admissionwebhooks", "")
		wantStatus(t, r, http.StatusOK)
		var list v4.AdmissionWebhookList
		if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) < 5 {
			t.Fatalf("%v: %d items", err, len(list.Items))
		}
		for _, it := range list.Items {
			wantStatus(t, call(t, http.MethodDelete, url+"/v1/admissionwebhooks/"+it.Metadata.Name, ""), http.StatusOK)
		}
		wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", appJSON("wh-f", "y", ""), tenant), http.StatusOK)
	})
}
