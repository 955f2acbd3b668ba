package e2e

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/pki"
)

// TestAdmissionWebhooksE2E (docs/policy.md, "Admission webhooks"): one server, and a
// hook server in the test whose certificate the cluster CA signed through `berth
// certificate sign`. A mutating hook adds a label and a validating hook refuses a spec,
// on /v1 (berth apply) and through BCS's route; a namespace's token cannot write a
// configuration; with the hook down, failurePolicy Fail refuses a write naming the hook
// and Ignore lets it through with an event.
func TestAdmissionWebhooksE2E(t *testing.T) {
	s := startServer(t, t.TempDir(), "--bcs-cluster-id", bcsCluster)
	const ns = "hooked"
	tenant := s.as(teamToken(t, s, ns))
	dir := t.TempDir()
	hookURL := startCAHook(t, s, dir)

	config := func(name, typ, path, policy string) string {
		return "kind: admissionwebhook\nmetadata: {name: " + name + "}\nwebhooks:\n" +
			"- name: " + path + ".hooks.test\n  type: " + typ + "\n  clientConfig: {url: '" + hookURL + "/" + path + "'}\n" +
			"  rules: [{operations: [CREATE, UPDATE], kinds: [process, application]}]\n" +
			"  namespaceSelector: {operator: In, values: [" + ns + "]}\n  failurePolicy: " + policy + "\n  timeoutSeconds: 5\n"
	}
	write := func(name, doc string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	proc := func(name, labels string) string {
		return `{"apiVersion":"v4","kind":"process","metadata":{"name":"` + name + `","namespace":"` + ns + `","labels":{` + labels + `}},` +
			`"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"p","startCmd":"exec sleep 3600","resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`
	}

	t.Run("a namespace's token cannot write a configuration", func(t *testing.T) {
		r := tenant.berth("", "admissionwebhook", "apply", "-f", write("evil", config("evil", "Mutating", "label", "Ignore")))
		if r.code == 0 || !strings.Contains(r.stderr, "admin") {
			t.Fatalf("exit %d: %s%s, want a refusal naming admin", r.code, r.stdout, r.stderr)
		}
	})

	s.mustBerth("admissionwebhook", "apply", "-f", write("a-label", config("a-label", "Mutating", "label", "Fail")))
	s.mustBerth("admissionwebhook", "apply", "-f", write("b-deny", config("b-deny", "Validating", "deny", "Fail")))
	if out := s.mustBerth("get", "admissionwebhooks"); !strings.Contains(out, "a-label") || !strings.Contains(out, "MUTATING") {
		t.Fatalf("berth get admissionwebhooks:\n%s", out)
	}
	if out := s.mustBerth("describe", "admissionwebhook", "b-deny"); !strings.Contains(out, "Validating") || !strings.Contains(out, "the cluster CA") {
		t.Fatalf("berth describe admissionwebhook:\n%s", out)
	}

	t.Run("on /v1", func(t *testing.T) {
		tenant.berthOK(t, proc("web", ""), "apply", "-f", "-")
		if out := s.mustBerth("get", "process", "web", "-n", ns, "-o", "json"); !strings.Contains(out, `"team": "blue"`) && !strings.Contains(out, `"team":"blue"`) {
			t.Fatalf("the hook's label is missing:\n%s", out)
		}
		r := tenant.berth(proc("bad", `"deny":"yes"`), "apply", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, "b-deny/deny.hooks.test") || !strings.Contains(r.stderr, "refused by the test's policy") {
			t.Fatalf("exit %d: %s, want the validating hook's refusal", r.code, r.stderr)
		}
	})

	t.Run("through BCS's route", func(t *testing.T) {
		gw := &bcsClient{t: t, s: tenant, base: s.url}
		const api = "/bcsapi/v4/scheduler/mesos/namespaces/" + ns + "/processes"
		gw.ok(http.MethodPost, api, []byte(proc("bcs-web", "")))
		var got struct {
			Metadata struct{ Labels map[string]string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(s.mustBerth("get", "process", "bcs-web", "-n", ns, "-o", "json")), &got); err != nil || got.Metadata.Labels["team"] != "blue" {
			t.Fatalf("labels %v (%v), want team=blue", got.Metadata.Labels, err)
		}
		// BCS's own admissionwebhook route: an administrator's, as /v1's.
		bcsHook := `{"kind":"AdmissionWebhookConfiguration","metadata":{"name":"bcs-hook","namespace":"` + ns + `"},` +
			`"resourcesRef":{"operation":"Delete","kind":"process"},"admissionWebhooks":[{"name":"x.hooks.test","failurePolicy":"Ignore",` +
			`"clientConfig":{"url":"` + hookURL + `/x"},"namespaceSelector":{"operator":"In","values":["` + ns + `"]}}]}`
		admin := &bcsClient{t: t, s: s, base: s.url}
		admin.ok(http.MethodPost, "/bcsapi/v4/scheduler/mesos/namespaces/"+ns+"/admissionwebhook", []byte(bcsHook))
		if a := admin.ok(http.MethodGet, "/bcsapi/v4/scheduler/mesos/admissionwebhooks", nil); !strings.Contains(string(a.Data), "bcs-hook") {
			t.Fatalf("BCS's list: %s", a.Data)
		}
		admin.ok(http.MethodDelete, "/bcsapi/v4/scheduler/mesos/namespaces/"+ns+"/admissionwebhook/bcs-hook", nil)
		if code, a := bcsRefusal(t, tenant, http.MethodPost, "/bcsapi/v4/scheduler/mesos/namespaces/"+ns+"/admissionwebhook", bcsHook); code != http.StatusForbidden {
			t.Fatalf("a namespace's token writing a configuration through BCS: HTTP %d %+v, want 403", code, a)
		}
		if code, a := bcsRefusal(t, tenant, http.MethodPost, api, proc("bcs-bad", `"deny":"yes"`)); code != http.StatusForbidden ||
			!strings.Contains(a.Message, "b-deny/deny.hooks.test") {
			t.Fatalf("HTTP %d %+v, want the validating hook's refusal", code, a)
		}
	})

	t.Run("a refused apply changes nothing", func(t *testing.T) {
		// A new class and a changed configuration are put before the stream, whose
		// process the server refuses: both are put back.
		stream := "kind: PriorityClass\nmetadata: {name: e2e-undone}\nvalue: 500\n---\n" +
			strings.Replace(config("a-label", "Mutating", "label", "Fail"), "failurePolicy: Fail", "failurePolicy: Ignore", 1) + "---\n" +
			strings.Replace(proc("undone", ""), `"instance":1`, `"instance":-1`, 1)
		r := s.berth(stream, "apply", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, "spec.instance") || !strings.Contains(r.stderr, "put back") {
			t.Fatalf("exit %d: %s%s, want the refusal and that the cluster-wide documents were put back", r.code, r.stdout, r.stderr)
		}
		resp, err := s.http.Get(s.url + "/v1/priorityclasses/e2e-undone")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("the class apply created is still there: HTTP %d", resp.StatusCode)
		}
		var hook v4.AdmissionWebhook
		if err := s.apiGet("/v1/admissionwebhooks/a-label", &hook); err != nil || len(hook.Hooks()) != 1 || hook.Hooks()[0].FailurePolicy != "Fail" {
			t.Errorf("a-label after the refused apply: %+v (%v), want its failurePolicy Fail again", hook.Hooks(), err)
		}
	})

	t.Run("failure policies with the hook down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "https://" + ln.Addr().String()
		ln.Close()
		doc := strings.Replace(config("c-down", "Validating", "x", "Fail"), hookURL, down, 1)
		s.mustBerth("admissionwebhook", "apply", "-f", write("c-down", doc))
		r := tenant.berth(proc("down", ""), "apply", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, "c-down/x.hooks.test") {
			t.Fatalf("exit %d: %s, want a refusal naming the hook", r.code, r.stderr)
		}
		s.mustBerth("admissionwebhook", "apply", "-f", write("c-down", strings.Replace(doc, "failurePolicy: Fail", "failurePolicy: Ignore", 1)))
		tenant.berthOK(t, proc("down", ""), "apply", "-f", "-")
		s.eventsSay("AdmissionWebhookFailed", "-n", ns)
		s.mustBerth("admissionwebhook", "delete", "c-down", "a-label", "b-deny")
		tenant.berthOK(t, proc("free", `"deny":"yes"`), "apply", "-f", "-")
	})
}

// berthOK runs the CLI with stdin and fails the test on a non-zero exit.
func (s *devServer) berthOK(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := s.berth(stdin, args...)
	if r.code != 0 {
		t.Fatalf("berth %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// startCAHook serves the test's hooks on 127.0.0.2 (the server's own certificate names
// 127.0.0.1, which no webhook's may) with a certificate signed by the cluster CA
// through `berth certificate sign`, and returns its URL.
func startCAHook(t *testing.T, s *devServer, dir string) string {
	t.Helper()
	csrPEM, keyPEM, err := pki.NewCSR("hooks.test")
	if err != nil {
		t.Fatal(err)
	}
	csrFile, certFile := filepath.Join(dir, "hook.csr"), filepath.Join(dir, "hook.crt")
	if err := os.WriteFile(csrFile, csrPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := s.berth("", "certificate", "sign", "--csr", csrFile, "--ip", "127.0.0.1", "--approve"); r.code == 0 || !strings.Contains(r.stderr, "ips[0]") {
		t.Fatalf("a certificate for the API's own address: exit %d %s, want ips[0] refused", r.code, r.stderr)
	}
	s.mustBerth("certificate", "sign", "--csr", csrFile, "--ip", "127.0.0.2", "--name", "hooks-test", "--approve", "--out", certFile)
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return serveHooks(t, pair, serveE2EHook)
}

// serveHooks serves admission webhooks with handler over HTTPS on 127.0.0.2 (an address
// that is not the server's: a hook may not point at berth's own API) until the test
// ends, and answers the URL.
func serveHooks(tb testing.TB, pair tls.Certificate, handler http.HandlerFunc) string {
	tb.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.2:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String()
}

// hookReview is the part of an admission review the test hooks read.
type hookReview struct {
	Request struct {
		UID    string          `json:"uid"`
		Object json.RawMessage `json:"object"`
	} `json:"request"`
}

// readReview decodes a review (at most 1 MiB), answering 400 when it cannot.
func readReview(w http.ResponseWriter, r *http.Request) (hookReview, bool) {
	var rv hookReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return rv, false
	}
	return rv, true
}

// serveE2EHook: /label adds team=blue, /deny refuses an object labelled deny=yes.
func serveE2EHook(w http.ResponseWriter, r *http.Request) {
	rv, ok := readReview(w, r)
	if !ok {
		return
	}
	var obj struct {
		Metadata struct{ Labels map[string]string } `json:"metadata"`
	}
	json.Unmarshal(rv.Request.Object, &obj)
	resp := map[string]any{"uid": rv.Request.UID, "allowed": true}
	switch r.URL.Path {
	case "/label":
		patch := `[{"op":"add","path":"/metadata/labels/team","value":"blue"}]`
		if obj.Metadata.Labels == nil {
			patch = `[{"op":"add","path":"/metadata/labels","value":{"team":"blue"}}]`
		}
		resp["patchType"], resp["patch"] = "JSONPatch", json.RawMessage(patch)
	case "/deny":
		if obj.Metadata.Labels["deny"] == "yes" {
			resp["allowed"], resp["status"] = false, map[string]any{"message": "refused by the test's policy", "code": 403}
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.berth.io/v1", "kind": "AdmissionReview", "response": resp})
}

// bcsRefusal calls a BCS route as s expecting a refusal: its HTTP status and envelope.
func bcsRefusal(t *testing.T, s *devServer, method, path, body string) (int, bcsAnswer) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("BCS-ClusterID", bcsCluster)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a bcsAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.Result {
		t.Fatalf("%s %s: %v %+v", method, path, err, a)
	}
	return resp.StatusCode, a
}
