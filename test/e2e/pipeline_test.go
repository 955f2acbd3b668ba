package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The example pipeline (examples/pipeline) against the real binary, with a Docker node:
// prepare (a process) → train (a container, on CPUs: no GPU here) → evaluate (a script)
// → publish the model → roll the model-server deployment to it when the score passes.

const pipeNS = "e2epipe"

// pipeExample reads a file of examples/pipeline, moved to the test's namespace.
func pipeExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/pipeline/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "namespace: ml", "namespace: "+pipeNS)
}

// pipeWorkflow reads workflow name of pipeNS with every node in status.nodes.
func (s *devServer) pipeWorkflow(t *testing.T, name string) *v4.Workflow {
	t.Helper()
	var wf v4.Workflow
	if err := json.Unmarshal([]byte(s.mustBerth("workflow", "get", name, "-n", pipeNS, "-o", "json")), &wf); err != nil {
		t.Fatal(err)
	}
	return &wf
}

// pipeNodes are a workflow's nodes by display name.
func pipeNodes(wf *v4.Workflow) map[string]v4.WfNodeStatus {
	out := map[string]v4.WfNodeStatus{}
	for _, n := range wf.Status.Nodes {
		out[n.DisplayName] = n
	}
	return out
}

// submitPipeline submits the example as name with args and waits for it to finish.
func (s *devServer) submitPipeline(t *testing.T, name string, args ...string) (*v4.Workflow, map[string]v4.WfNodeStatus) {
	t.Helper()
	r := s.berth(pipeExample(t, "pipeline.yaml"), append([]string{"submit", "-f", "-", "--name", name}, args...)...)
	if r.code != 0 {
		t.Fatalf("submit: %s%s", r.stdout, r.stderr)
	}
	var wf *v4.Workflow
	waitUntil(t, 120*time.Second, "workflow "+name+" to finish", func() bool {
		wf = s.pipeWorkflow(t, name)
		return v4.WfPhaseFinished(wf.Status.Phase)
	})
	return wf, pipeNodes(wf)
}

// untarOne is the content of the one file of a gzipped tar (as the agent stores an
// artifact).
func untarOne(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the artifact is not gzipped: %v", err)
	}
	tr := tar.NewReader(zr)
	if _, err := tr.Next(); err != nil {
		t.Fatalf("the artifact is not a tar: %v", err)
	}
	out, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// modelURLs are the MODEL_URL of model-server's running pods, by application.
func (s *devServer) modelURLs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, app := range []string{"model-server-v1", "model-server-v2", "model-server-v3"} {
		for _, tg := range s.taskGroups(pipeNS, app) {
			if tg.Status.Phase != v4.StatusRunning {
				continue
			}
			if r := s.execIn(pipeNS, tg.Metadata.Name, "serve", "env"); r.code == 0 {
				out[app] = envOf(r.stdout)["MODEL_URL"]
			}
		}
	}
	return out
}

// revocable is a workflow that waits (a suspend step), then applies model-server with
// MODEL_URL set to url, in namespace ns.
func revocable(t *testing.T, ns, url string) string {
	t.Helper()
	deploy := strings.Replace(pipeExample(t, "model-server.yaml"), "value: none", "value: "+url, 1)
	if ns != pipeNS {
		deploy = strings.Replace(deploy, "namespace: "+pipeNS, "namespace: "+ns, 1)
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v4", "kind": "workflow", "metadata": map[string]string{"name": "revoked", "namespace": pipeNS},
		"spec": map[string]any{"entrypoint": "main", "templates": []any{
			map[string]any{"name": "main", "steps": []any{[]any{map[string]string{"name": "wait", "template": "wait"}},
				[]any{map[string]string{"name": "deploy", "template": "deploy"}}}},
			map[string]any{"name": "wait", "suspend": map[string]any{}},
			map[string]any{"name": "deploy", "resource": map[string]string{"action": "apply", "manifest": deploy}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// submitterRevoked: a namespace-limited token cannot submit a resource step into another
// namespace; a workflow it submitted whose token is revoked before its resource step
// runs fails that step, and the deployment is left alone.
func submitterRevoked(t *testing.T, s *devServer, rolledTo string) {
	policy := filepath.Join(t.TempDir(), "pipe.yaml")
	os.WriteFile(policy, []byte("kind: acl-policy\nmetadata: {name: pipe}\nrules:\n  - {namespaces: ["+pipeNS+"], kinds: [\"*\"], verbs: [read, write]}\n"), 0o644)
	s.mustBerth("acl", "policy", "apply", "-f", policy)
	token := strings.TrimSpace(s.mustBerth("acl", "token", "create", "--policy", "pipe", "--name", "pipeline", "-o", "name"))
	u := s.as(token)
	if r := u.berth(revocable(t, "other", "x"), "submit", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, "namespace "+pipeNS+" only") {
		t.Errorf("a resource step into another namespace: %d %s%s", r.code, r.stdout, r.stderr)
	}
	u.mustBerth("submit", "-f", writeFiles(t, map[string]string{"wf.json": revocable(t, pipeNS, "/revoked")})+"/wf.json")
	waitUntil(t, 30*time.Second, "the workflow to wait", func() bool {
		return pipeNodes(s.pipeWorkflow(t, "revoked"))["wait"].Phase == v4.WfRunning
	})
	id, _, _ := strings.Cut(token, ".")
	s.mustBerth("acl", "token", "revoke", id)
	s.mustBerth("workflow", "resume", "revoked", "-n", pipeNS)
	var wf *v4.Workflow
	waitUntil(t, 30*time.Second, "the workflow to finish", func() bool {
		wf = s.pipeWorkflow(t, "revoked")
		return v4.WfPhaseFinished(wf.Status.Phase)
	})
	if d := pipeNodes(wf)["deploy"]; wf.Status.Phase != v4.WfFailed || d.Phase != v4.WfFailed || !strings.Contains(d.Message, "is unknown or revoked") {
		t.Errorf("%s: deploy %s %q", wf.Status.Phase, d.Phase, d.Message)
	}
	if env := s.deployment(pipeNS, "model-server").Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != rolledTo {
		t.Errorf("the deployment changed: %+v", env)
	}
}

func TestPipelineExample(t *testing.T) {
	s, _ := startDockerNode(t, "pipe-docker", "35450-35499")
	s.cleanupAllOwners(pipeNS, 60*time.Second, "workflows", "deployments")
	s.applySpec(t, pipeExample(t, "model-server.yaml"))
	s.running(t, pipeNS, "model-server-v1", 1)
	var rolledTo string

	t.Run("passes and rolls the deployment", func(t *testing.T) {
		wf, nodes := s.submitPipeline(t, "pass")
		if wf.Status.Phase != v4.WfSucceeded {
			t.Fatalf("%s %q: %+v", wf.Status.Phase, wf.Status.Message, nodes)
		}
		order := []string{"prepare", "train-cpu", "evaluate", "deploy"}
		for i, name := range order {
			n := nodes[name]
			if n.Phase != v4.WfSucceeded {
				t.Fatalf("step %s: %s %q", name, n.Phase, n.Message)
			}
			if i > 0 && n.StartedAt.Before(nodes[order[i-1]].FinishedAt) {
				t.Errorf("%s started at %s, before %s finished at %s", name, n.StartedAt, order[i-1], nodes[order[i-1]].FinishedAt)
			}
		}
		if p := nodes["train-gpu"].Phase; p != v4.WfSkipped {
			t.Errorf("train-gpu %s, want Skipped (gpu=false)", p)
		}
		eval := nodes["evaluate"]
		code, body := s.do(t, http.MethodGet, s.url+"/v1/namespaces/"+pipeNS+"/workflows/pass/artifacts/"+eval.ID+"/model", "")
		if code != http.StatusOK {
			t.Fatalf("download the model: %d %s", code, body)
		}
		if model := untarOne(t, body); !strings.Contains(model, "EPOCHS=3 ROWS=100 DEVICE=cpu") {
			t.Errorf("the model is %q", model)
		}
		rolledTo = "/v1/namespaces/" + pipeNS + "/workflows/pass/artifacts/" + eval.ID + "/model"
		if d := nodes["deploy"]; d.Outputs == nil || len(d.Outputs.Parameters) != 2 {
			t.Errorf("the resource step's outputs: %+v", d.Outputs)
		}
		waitUntil(t, 90*time.Second, "model-server's new pod to serve the new model", func() bool {
			urls := s.modelURLs(t)
			return len(urls) == 1 && urls["model-server-v2"] == rolledTo
		})
	})

	t.Run("a failed evaluation leaves the deployment alone", func(t *testing.T) {
		if rolledTo == "" {
			t.Skip("the first run did not roll the deployment")
		}
		wf, nodes := s.submitPipeline(t, "fail", "-p", "epochs=1")
		if wf.Status.Phase != v4.WfSucceeded || nodes["evaluate"].Phase != v4.WfSucceeded || nodes["deploy"].Phase != v4.WfSkipped {
			t.Fatalf("%s %q: evaluate %s, deploy %s", wf.Status.Phase, wf.Status.Message, nodes["evaluate"].Phase, nodes["deploy"].Phase)
		}
		if out := nodes["evaluate"].Outputs; out == nil || len(out.Parameters) == 0 || strings.TrimSpace(*out.Parameters[0].Value) != "30" {
			t.Errorf("evaluate's outputs: %+v", out)
		}
		d := s.deployment(pipeNS, "model-server")
		if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != rolledTo {
			t.Errorf("the deployment changed: %+v", env)
		}
		if urls := s.modelURLs(t); len(urls) != 1 || urls["model-server-v2"] != rolledTo {
			t.Errorf("model-server's pods: %v", urls)
		}
	})

	t.Run("a revoked submitter's resource step fails", func(t *testing.T) {
		if rolledTo == "" {
			t.Skip("the first run did not roll the deployment")
		}
		submitterRevoked(t, s, rolledTo)
	})
}
