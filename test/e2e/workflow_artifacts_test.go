package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/berthhq/berth/test/berthtest"

	v4 "github.com/berthhq/berth/api/v4"
)

// Workflows passing parameters and artifacts, on one server (its embedded artifact
// repository, and an S3 repository served by gofakes3 in the test process on loopback)
// and one agent running process steps, and container steps where Docker is.

// artEnv is the shared cluster of TestWorkflowArtifacts.
type artEnv struct {
	*wfEnv
	agent *agentProc
	addr  string     // the server's host:port, kept across its restart
	top   *testing.T // the test that owns the cluster (a restarted server lives as long)
	s3    *s3mem.Backend
}

// step is a process template named name that runs cmd in its work dir (where its
// inputs are staged and its outputs collected), with the template's extra fields.
func step(name, cmd, extra string) string {
	return fmtSpec(`{"name":%q%s,"process":{"procName":"sh","startCmd":%q,"startGracePeriod":1,"resources":{"limits":{"cpu":"0.1","memory":"32"}}}}`,
		name, extra, cmd+"; exit $?")
}

// node is the Pod node of wf whose template is tmpl.
func node(t *testing.T, wf *v4.Workflow, tmpl string) *v4.WfNodeStatus {
	t.Helper()
	for _, n := range wf.Status.Nodes {
		if n.TemplateName == tmpl && n.Type == v4.WfNodePod {
			return &n
		}
	}
	t.Fatalf("workflow %s has no step of template %s", wf.Metadata.Name, tmpl)
	return nil
}

// artifact downloads the artifact name of wf's step of template tmpl.
func (e *artEnv) artifact(t *testing.T, wf, tmpl, name string) (int, []byte) {
	t.Helper()
	n := node(t, e.get(t, wf), tmpl)
	s := e.live()
	return s.do(t, http.MethodGet, s.url+"/v1/namespaces/"+wfNS+"/workflows/"+wf+"/artifacts/"+n.ID+"/"+name, "")
}

// blob is where the embedded repository keeps bytes.
func (e *artEnv) blob(data []byte) string {
	h := sha256.Sum256(data)
	x := hex.EncodeToString(h[:])
	return filepath.Join(e.live().dataDir, "artifacts", "blobs", "sha256", x[:2], x)
}

// succeeded waits for workflow name to succeed and checks what its steps wrote to file.
func (e *artEnv) succeeded(t *testing.T, name, file string, want ...string) *v4.Workflow {
	t.Helper()
	wf := e.wait(t, name, 90*time.Second)
	if got := e.lines(t, file); wf.Status.Phase != v4.WfSucceeded || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s %q; %s holds %q, want %q", wf.Status.Phase, wf.Status.Message, file, got, want)
	}
	return wf
}

// startS3 serves bucket "arts" on loopback and stores the secret and the
// artifactrepository "s3" naming it.
func (e *artEnv) startS3(t *testing.T) {
	e.s3 = s3mem.New()
	if err := e.s3.CreateBucket("arts"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(e.s3, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	b64 := base64.StdEncoding.EncodeToString
	e.cl.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"s3keys","namespace":%q},
	 "datas":{"ak":{"content":%q},"sk":{"content":%q}}}`, wfNS, b64([]byte("AKIDE2E")), b64([]byte("e2e-secret-key"))))
	e.cl.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"artifactrepository","metadata":{"name":"s3","namespace":%q},
	 "spec":{"s3":{"endpoint":%q,"bucket":"arts","keyPrefix":"berth/","insecure":true,
	  "accessKeySecret":{"name":"s3keys","key":"ak"},"secretKeySecret":{"name":"s3keys","key":"sk"}}}}`,
		wfNS, strings.TrimPrefix(srv.URL, "http://")))
}

// restartServer stops the server and starts it again on its address and data dir.
func (e *artEnv) restartServer() {
	e.top.Helper()
	old := e.live()
	old.stop()
	s := startBerthAt(e.top, berthBin, e.addr, old.dataDir, "server", "--join-token", joinToken, "--artifact-allow-private-endpoints")
	e.servers[0].devServer, e.cl = s, s
}

func TestWorkflowArtifacts(t *testing.T) {
	requireRoot(t)
	addr := berthtest.FreeAddr(t)
	s := startBerthAt(t, berthBin, addr, t.TempDir(), "server", "--join-token", joinToken, "--artifact-allow-private-endpoints")
	e := &artEnv{wfEnv: &wfEnv{servers: []*haServer{{devServer: s, name: "s1"}}, cl: s, dir: t.TempDir()}, addr: addr, top: t}
	writable(t, e.dir, "steps", "dag", "box", "killed")
	if dockerAnswers() {
		e.agent = startDockerAgent(t, s, "wfart", "34750-34799")
	} else {
		e.agent = startAgent(t, s, "wfart", "34750-34799", "--docker", "off")
	}
	e.cl.cleanupOwners(wfNS, "workflows", 60*time.Second)
	e.startS3(t)
	gen := step("gen", "mkdir art && echo art-{{workflow.name}} > art/f.txt && printf P1 > p.txt",
		`,"outputs":{"parameters":[{"name":"p","valueFrom":{"path":"/p.txt"}}],"artifacts":[{"name":"out","path":"/art"%s}]}`)
	use := func(file string) string {
		return step("use", "cat in/f.txt >> "+e.dir+"/"+file+" && echo {{inputs.parameters.p}} >> "+e.dir+"/"+file,
			`,"inputs":{"parameters":[{"name":"p"}],"artifacts":[{"name":"in","path":"/in"}]}`)
	}

	t.Run("steps through the embedded repository", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("steps", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"gen","template":"gen"}],[{"name":"use","template":"use","arguments":{
		  "parameters":[{"name":"p","value":"{{steps.gen.outputs.parameters.p}}"}],
		  "artifacts":[{"name":"in","from":"{{steps.gen.outputs.artifacts.out}}"}]}}]]},`+
			fmt.Sprintf(gen, "")+","+use("steps")+`]}`))
		e.succeeded(t, "steps", "steps", "art-steps", "P1")
	})

	t.Run("dag through an S3 repository", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("dag", `{"entrypoint":"main","templates":[
		 {"name":"main","dag":{"tasks":[{"name":"A","template":"gen"},{"name":"B","template":"use","dependencies":["A"],"arguments":{
		  "parameters":[{"name":"p","value":"{{tasks.A.outputs.parameters.p}}"}],
		  "artifacts":[{"name":"in","from":"{{tasks.A.outputs.artifacts.out}}"}]}}]}},`+
			fmt.Sprintf(gen, `,"repository":{"name":"s3"}`)+","+use("dag")+`]}`))
		e.succeeded(t, "dag", "dag", "art-dag", "P1")
		objs, err := e.s3.ListBucket("arts", &gofakes3.Prefix{}, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		if len(objs.Contents) != 1 || !strings.HasPrefix(objs.Contents[0].Key, "berth/"+wfNS+"/dag/") {
			t.Fatalf("the bucket holds %+v, want A's artifact", objs.Contents)
		}
		if code, body := e.artifact(t, "dag", "gen", "out"); code != http.StatusOK || len(body) == 0 {
			t.Fatalf("download from S3: %d %s", code, body)
		}
	})

	t.Run("container step with input and output artifacts", func(t *testing.T) {
		requireDocker(t)
		box := fmtSpec(`{"name":"box","inputs":{"artifacts":[{"name":"in","path":"/in"}]},
		 "outputs":{"artifacts":[{"name":"out","path":"/out/g.txt"}]},"container":%s}`,
			container("main", "mkdir -p /out && sed s/art/box/ /in/f.txt > /out/g.txt", ""))
		check := step("check", "cat g.txt >> "+e.dir+"/box", `,"inputs":{"artifacts":[{"name":"g","path":"/g.txt"}]}`)
		e.cl.applySpec(t, wfDoc("box", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"gen","template":"gen"}],
		  [{"name":"box","template":"box","arguments":{"artifacts":[{"name":"in","from":"{{steps.gen.outputs.artifacts.out}}"}]}}],
		  [{"name":"check","template":"check","arguments":{"artifacts":[{"name":"g","from":"{{steps.box.outputs.artifacts.out}}"}]}}]]},`+
			fmt.Sprintf(gen, "")+","+box+","+check+`]}`))
		e.succeeded(t, "box", "box", "box-box")
	})

	t.Run("submit --watch, and the stored log read with the step's agent gone", func(t *testing.T) {
		doc := wfDoc("watched", `{"entrypoint":"hello","templates":[`+step("hello", "echo hello-from-the-step", "")+`]}`)
		if r := e.cl.berth(doc, "submit", "-f", "-", "--watch"); r.code != 0 || !strings.Contains(r.stdout, "Succeeded") {
			t.Fatalf("submit --watch exited %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		// Task groups are berth's to delete (with their workflow): the agent that ran the
		// step, which holds its task group's log, is killed instead.
		e.agent.kill()
		out := e.cl.berth("", "workflow", "logs", "watched", "-n", wfNS)
		e.agent.start()
		if out.code != 0 || !strings.Contains(out.stdout, "hello-from-the-step") {
			t.Fatalf("workflow logs with the agent down: %d\n%s%s", out.code, out.stdout, out.stderr)
		}
	})

	t.Run("an output over its bound fails the step", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("big", `{"entrypoint":"big","templates":[`+
			step("big", "head -c 300000 /dev/zero > big.txt", `,"outputs":{"parameters":[{"name":"b","valueFrom":{"path":"/big.txt"}}]}`)+`]}`))
		wf := e.wait(t, "big", 90*time.Second)
		if n := node(t, wf, "big"); wf.Status.Phase != v4.WfFailed || n.Phase != v4.WfFailed || !strings.Contains(n.Message, "more than 262144") {
			t.Fatalf("workflow %s %q, step %s %q", wf.Status.Phase, wf.Status.Message, n.Phase, n.Message)
		}
	})

	t.Run("agent killed during a step", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("killed", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"slow","template":"slow"}],[{"name":"next","template":"next"}]]},`+
			step("slow", "sleep 3 && echo slow >> "+e.dir+"/killed", "")+","+step("next", "echo next >> "+e.dir+"/killed", "")+`]}`))
		waitUntil(t, 60*time.Second, "the slow step to run", func() bool {
			wf := e.get(t, "killed")
			return len(wf.Status.Nodes) > 0 && stepPhase(wf, "slow") == v4.WfRunning
		})
		e.agent.kill()
		waitUntil(t, 30*time.Second, "the step to end while its agent is down", func() bool { return len(e.lines(t, "killed")) == 1 })
		e.agent.start()
		e.succeeded(t, "killed", "killed", "slow", "next")
	})

	var kept []byte // an artifact of workflow "steps"
	t.Run("deleting a workflow stops its steps and frees its artifacts", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("doomed", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"gen","template":"gen"}],[{"name":"long","template":"long"}]]},`+
			fmt.Sprintf(gen, "")+","+step("long", "echo $$ > "+e.dir+"/pid && sleep 120", "")+`]}`))
		waitUntil(t, 60*time.Second, "the long step to run", func() bool {
			return stepPhase(e.get(t, "doomed"), "long") == v4.WfRunning && fileSays(e.dir, "pid")
		})
		code, doomed := e.artifact(t, "doomed", "gen", "out")
		if code != http.StatusOK {
			t.Fatalf("download: %d %s", code, doomed)
		}
		if code, kept = e.artifact(t, "steps", "gen", "out"); code != http.StatusOK {
			t.Fatalf("download: %d %s", code, kept)
		}
		if _, err := os.Stat(e.blob(doomed)); err != nil {
			t.Fatalf("the artifact's blob: %v", err)
		}
		pid := strings.TrimSpace(readFile(t, filepath.Join(e.dir, "pid")))
		e.cl.mustBerth("delete", "workflow", "doomed", "-n", wfNS)
		waitUntil(t, 60*time.Second, "the steps to go", func() bool { return len(e.cl.taskGroups(wfNS, "doomed")) == 0 })
		waitUntil(t, 30*time.Second, "the running step to be stopped", func() bool { return !pidAlive(pid) })
		// The collector's first round runs when the server starts: a restart collects
		// at once what its 30 s rounds would.
		e.restartServer()
		waitUntil(t, 30*time.Second, "the deleted workflow's blob to be freed", func() bool {
			_, err := os.Stat(e.blob(doomed))
			return os.IsNotExist(err)
		})
	})

	t.Run("a restarted server keeps its embedded artifacts", func(t *testing.T) {
		if kept == nil {
			e.restartServer()
		}
		code, got := e.artifact(t, "steps", "gen", "out")
		if code != http.StatusOK || kept != nil && string(got) != string(kept) {
			t.Fatalf("after the restart: %d, %d bytes (before: %d)", code, len(got), len(kept))
		}
	})
}

// stepPhase is the phase of wf's Pod node of template tmpl ("" before it is made).
func stepPhase(wf *v4.Workflow, tmpl string) string {
	for _, n := range wf.Status.Nodes {
		if n.TemplateName == tmpl && n.Type == v4.WfNodePod {
			return n.Phase
		}
	}
	return ""
}

// fileSays reports whether dir/name has a line.
func fileSays(dir, name string) bool {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return err == nil && strings.Contains(string(b), "\n")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pidAlive reports whether process pid exists (and is no zombie of ours).
func pidAlive(pid string) bool {
	var n int
	if _, err := fmt.Sscan(pid, &n); err != nil || n <= 0 {
		return false
	}
	return syscall.Kill(n, 0) == nil
}

// dockerAnswers reports whether a Docker daemon answers.
func dockerAnswers() bool {
	return exec.Command("docker", "info", "--format", "{{.ServerVersion}}").Run() == nil
}
