package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// stepTG stores task group ns/name of workflow wf (uid u1) on node, a step whose
// spec.step reads input "in" (produced by node n-0) and writes output "out" and its log.
func stepTG(t *testing.T, ns, name, node string, edit func(*v4.StepIO)) {
	t.Helper()
	putTaskGroup(t, ns, name, node, func(tg *v4.TaskGroup) {
		tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindWorkflow, Name: "wf"}
		step := &v4.StepIO{Workflow: "wf", NodeID: "n-1", Main: "web",
			Inputs:    []v4.StepInput{{Name: "in", Path: "/in", Key: ns + "/wf/u1/n-0/out"}, {Name: "raw", Path: "/raw", Raw: new("x")}},
			Artifacts: []v4.StepOutputArtifact{{Name: "out", Path: "/out", Key: ns + "/wf/u1/n-1/out"}},
			LogsKey:   ns + "/wf/u1/n-1/main-logs"}
		if edit != nil {
			edit(step)
		}
		tg.Spec.Step = step
	})
}

func storeWorkflow(t *testing.T, ns, name, uid string) {
	t.Helper()
	wf := &v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns}, Status: v4.WorkflowStatus{UID: uid}}
	if err := testStore.Create(context.Background(), wf, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func agentArtifactURL(url, ns, tg, param, name string) string {
	return url + "/v1/agent/artifacts?namespace=" + ns + "&taskgroup=" + tg + "&" + param + "=" + name
}

func wantArtMsg(t *testing.T, r response, code int, part string) {
	t.Helper()
	wantStatus(t, r, code)
	e := decodeError(t, r)
	msg := e.Message
	for _, d := range e.Details {
		msg += "; " + d.Field + ": " + d.Message
	}
	if !strings.Contains(msg, part) {
		t.Fatalf("message %q, want it to contain %q", msg, part)
	}
}

func TestAgentArtifactRoutes(t *testing.T) {
	url := newTestServer(t, Config{ArtifactDir: t.TempDir()})
	stepTG(t, "ns", "s1", "n1", nil)
	body := "a gzipped tar, say"

	r := callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "out"), body, "")
	wantStatus(t, r, http.StatusOK)
	var got v4.StoredArtifact
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	want := v4.StoredArtifact{Name: "out", Key: "ns/wf/u1/n-1/out", Size: int64(len(body)), Digest: "sha256:" + hex.EncodeToString(sum[:])}
	if got != want {
		t.Fatalf("stored %+v, want %+v", got, want)
	}
	wantStatus(t, callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "main-logs"), "log lines\n", ""), http.StatusOK)

	for _, c := range []struct {
		name, node, method, url, body string
		code                          int
		msg                           string
	}{
		{"another node's step", "n2", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "out"), "x", http.StatusForbidden, "not bound to node n2"},
		{"another node reads", "n2", http.MethodGet, agentArtifactURL(url, "ns", "s1", "input", "in"), "", http.StatusForbidden, "not bound to node n2"},
		{"an output the spec lacks", "n1", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "other"), "x", http.StatusForbidden, `no output artifact "other"`},
		{"an input the spec lacks", "n1", http.MethodGet, agentArtifactURL(url, "ns", "s1", "input", "out"), "", http.StatusForbidden, `no repository input "out"`},
		{"an input of another source", "n1", http.MethodGet, agentArtifactURL(url, "ns", "s1", "input", "raw"), "", http.StatusForbidden, `no repository input "raw"`},
		{"a missing input", "n1", http.MethodGet, agentArtifactURL(url, "ns", "s1", "input", "in"), "", http.StatusNotFound, "input artifact in of task group ns/s1"},
		{"no such task group", "n1", http.MethodGet, agentArtifactURL(url, "ns", "nope", "input", "in"), "", http.StatusNotFound, "task group ns/nope not found"},
		{"no name", "n1", http.MethodGet, url + "/v1/agent/artifacts?namespace=ns&taskgroup=s1", "", http.StatusBadRequest, "input: required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantArtMsg(t, callAs(t, c.node, c.method, c.url, c.body, ""), c.code, c.msg)
		})
	}

	// The next step reads what the first stored.
	stepTG(t, "ns", "s2", "n2", func(s *v4.StepIO) { s.Inputs[0].Key = "ns/wf/u1/n-1/out" })
	r = callAs(t, "n2", http.MethodGet, agentArtifactURL(url, "ns", "s2", "input", "in"), "", "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != body || r.header.Get("X-Berth-Digest") != want.Digest {
		t.Fatalf("read %q (digest %q), want %q", r.body, r.header.Get("X-Berth-Digest"), body)
	}

	// A spec naming keys of another namespace is refused both ways.
	stepTG(t, "ns", "s3", "n1", func(s *v4.StepIO) {
		s.Inputs[0].Key, s.Artifacts[0].Key = "other/wf/u1/n-1/out", "other/wf/u1/n-9/out"
	})
	wantArtMsg(t, callAs(t, "n1", http.MethodGet, agentArtifactURL(url, "ns", "s3", "input", "in"), "", ""), http.StatusForbidden, "not under the namespace")
	wantArtMsg(t, callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "s3", "artifact", "out"), "x", ""), http.StatusForbidden, "not under the namespace")

	// A task group that is not a step has nothing to store.
	putTaskGroup(t, "ns", "plain", "n1", nil)
	wantArtMsg(t, callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "plain", "artifact", "out"), "x", ""), http.StatusForbidden, "not a workflow step")
}

func TestWorkflowArtifactDownload(t *testing.T) {
	url := newTestServer(t, Config{ArtifactDir: t.TempDir()})
	stepTG(t, "ns", "s1", "n1", nil)
	storeWorkflow(t, "ns", "wf", "u1")
	wantStatus(t, callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "out"), "model", ""), http.StatusOK)
	wantStatus(t, callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "main-logs"), "trained\n", ""), http.StatusOK)

	for path, want := range map[string]string{"n-1/out": "model", "n-1/main-logs": "trained\n"} {
		r := call(t, http.MethodGet, url+"/v1/namespaces/ns/workflows/wf/artifacts/"+path, "")
		wantStatus(t, r, http.StatusOK)
		if string(r.body) != want {
			t.Fatalf("%s: %q, want %q", path, r.body, want)
		}
	}
	wantArtMsg(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/workflows/wf/artifacts/n-1/nope", ""), http.StatusNotFound, `no stored artifact "nope" of node "n-1"`)
	wantArtMsg(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/workflows/gone/artifacts/n-1/out", ""), http.StatusNotFound, "workflow ns/gone not found")

	// A token of another namespace reads nothing here.
	other := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: other}
rules:
  - namespaces: ["other"]
    kinds: ["*"]
    verbs: [read, write]
`, "other", "")
	wantArtMsg(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/ns/workflows/wf/artifacts/n-1/out", "", other), http.StatusForbidden, "may not read workflow in namespace ns")
}

func TestArtifactRepositoryAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"s3","namespace":"ns"},"datas":{"ak":{"content":"YQ=="},"sk":{"content":"Yg=="}}}`
	repo := func(name string, def bool) string {
		return `{"apiVersion":"v4","kind":"artifactrepository","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"default":` +
			map[bool]string{true: "true", false: "false"}[def] + `,"s3":{"endpoint":"s3.example.com","bucket":"arts",` +
			`"accessKeySecret":{"name":"s3","key":"ak"},"secretKeySecret":{"name":"s3","key":"sk"}}}}`
	}
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	wantArtMsg(t, callAs(t, "", http.MethodPost, url+"/v1/apply", repo("a", true), ro), http.StatusForbidden, "may not write artifactrepository in namespace ns")
	wantArtMsg(t, call(t, http.MethodPost, url+"/v1/apply", repo("a", true)), http.StatusUnprocessableEntity, "secret ns/s3 does not exist")
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", "["+secret+","+repo("a", true)+"]"), http.StatusOK)
	wantArtMsg(t, call(t, http.MethodPost, url+"/v1/apply", repo("b", true)), http.StatusConflict, "artifactrepository a is already the namespace's default")
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", repo("b", false)), http.StatusOK)
	// The credentials are never in the object: it names the secret only.
	r := call(t, http.MethodGet, url+"/v1/namespaces/ns/artifactrepositories/a", "")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"accessKeySecret":{"name":"s3","key":"ak"}`) {
		t.Fatalf("stored repository: %s", r.body)
	}

	wf := func(repoName string) string {
		return `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"w","namespace":"ns"},"spec":{"entrypoint":"m","templates":[` +
			`{"name":"m","container":{"image":"busybox"},"outputs":{"artifacts":[{"name":"o","path":"/o","repository":{"name":"` + repoName + `"}}]}}]}}`
	}
	wantArtMsg(t, call(t, http.MethodPost, url+"/v1/apply", wf("nope")), http.StatusUnprocessableEntity, "artifactrepository ns/nope does not exist")
	r = call(t, http.MethodPost, url+"/v1/apply", wf("nope"))
	if f := decodeError(t, r).Details; len(f) == 0 || f[0].Field != "spec.templates[0].outputs.artifacts[0].repository.name" {
		t.Fatalf("details %+v, want the field of the repository", f)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", wf("b")), http.StatusOK)
}

// Naming a secret in an artifactrepository is reading it: the server sends the access
// key in the clear to the endpoint the writer chose (and either item may be any of the
// namespace's secrets). A writer who may not read the namespace's secrets is refused.
func TestArtifactRepositoryNeedsSecretRead(t *testing.T) {
	url := newTestServer(t, Config{})
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"db","namespace":"ns"},"datas":{"password":{"content":"aHVudGVyMg=="}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", secret), http.StatusOK)
	repo := `{"apiVersion":"v4","kind":"artifactrepository","metadata":{"name":"leak","namespace":"ns"},"spec":{"s3":{` +
		`"endpoint":"attacker.example.com","bucket":"arts","accessKeySecret":{"name":"db","key":"password"},"secretKeySecret":{"name":"db","key":"password"}}}}`
	repoWriter := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: repos}
rules:
  - {namespaces: [ns], kinds: [artifactrepository], verbs: [read, write]}
`, "repos", "")
	r := callAs(t, "", http.MethodPost, url+"/v1/apply", repo, repoWriter)
	wantArtMsg(t, r, http.StatusForbidden, "may not read secret")
	if f := decodeError(t, r).Details; len(f) == 0 || f[0].Field != "spec.s3.accessKeySecret.name" {
		t.Fatalf("details %+v, want the secret's field", f)
	}
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/artifactrepositories/leak", ""), http.StatusNotFound)
	both := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: repos-and-secrets}
rules:
  - {namespaces: [ns], kinds: [artifactrepository, secret], verbs: [read, write]}
`, "repos-and-secrets", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", repo, both), http.StatusOK)
}
