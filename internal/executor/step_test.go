package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/stepio"
)

// artServer stands in for the server's agent artifact routes (docs/workflows.md,
// "Inputs and outputs"): GET streams an input by name, PUT keeps what it is sent. It
// also serves /data, an http input.
type artServer struct {
	mu     sync.Mutex
	inputs map[string][]byte // by taskgroup/input
	stored map[string][]byte // by taskgroup/artifact
}

func (a *artServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/data" {
		fmt.Fprint(w, "from http")
		return
	}
	if r.URL.Path != "/v1/agent/artifacts" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("namespace") != testNS {
		http.Error(w, "wrong namespace", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		b, ok := a.inputs[q.Get("taskgroup")+"/"+q.Get("input")]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"reason":"NotFound","message":"input %s is not stored"}}`, q.Get("input"))
			return
		}
		w.Write(b)
	case http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		name := q.Get("artifact")
		a.stored[q.Get("taskgroup")+"/"+name] = b
		json.NewEncoder(w).Encode(v4.StoredArtifact{Name: name, Key: "ns/wf/uid/node/" + name, Size: int64(len(b))})
	}
}

// newStepExecutor is a process executor whose steps use srv's routes and may fetch
// from loopback.
func newStepExecutor(t *testing.T) (*Executor, *recorder, *artServer, string) {
	t.Helper()
	e, _, rec := newProcessExecutor(t)
	as := &artServer{inputs: map[string][]byte{}, stored: map[string][]byte{}}
	srv := httptest.NewServer(as)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.StepArtifacts = c
	e.cfg.StepFetch = &stepio.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	return e, rec, as, srv.URL
}

// modelArchive is a stored directory artifact (as a step's collection makes it) with
// w.bin inside.
func modelArchive(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "model"), 0o755)
	os.WriteFile(filepath.Join(dir, "model", "w.bin"), []byte("weights"), 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var buf bytes.Buffer
	if _, _, err := stepio.Archive(context.Background(), stepio.RootSource{Root: root}, "model", &buf, 1<<20); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func stepTG(name, cmd string, step *v4.StepIO) *v4.TaskGroup {
	tg := processTG(name, v4.ProcessTask{ProcName: "main", StartCmd: cmd, StartGracePeriod: 1})
	tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindWorkflow, Name: "wf"}
	tg.Spec.KillGracePeriod = 1
	step.Main = "main"
	tg.Spec.Step = step
	return tg
}

// TestProcessStep runs real process steps: inputs from the repository, inline and over
// HTTP are staged in the work dir before the task starts; parameters, the result, an
// artifact and the log are collected after it exits; a staging failure fails the step
// before any task starts; a link the task planted does not carry a read outside.
func TestProcessStep(t *testing.T) {
	e, rec, as, url := newStepExecutor(t)
	raw, def := "inline text", "dflt"
	as.inputs["ok/model"] = modelArchive(t)

	t.Run("inputs and outputs", func(t *testing.T) {
		cmd := `mkdir -p out/dir && cat in/raw.txt > out/p && cat http.txt > out/h && cp in/model/w.bin out/dir/ && echo result-line`
		e.Run(context.Background(), stepTG("ok", cmd, &v4.StepIO{
			Inputs: []v4.StepInput{{Name: "raw", Path: "/in/raw.txt", Raw: &raw}, {Name: "model", Path: "/in/model", Key: "k"},
				{Name: "h", Path: "http.txt", HTTP: &v4.WfHTTPArtifact{URL: url + "/data"}}},
			Parameters: []v4.StepParameter{{Name: "p", Path: "/out/p"}, {Name: "h", Path: "/out/h"}, {Name: "d", Path: "/out/none", Default: &def}},
			Result:     true,
			Artifacts:  []v4.StepOutputArtifact{{Name: "dir", Path: "/out/dir", Key: "k2"}},
			LogsKey:    "logs",
		}))
		st := rec.waitPhase(t, "ok", v4.StatusFinish)
		s := st.Step
		if s == nil || !s.Collected || s.Error != "" || s.ExitCode != 0 {
			t.Fatalf("step result %+v (message %q)", s, st.Message)
		}
		got := map[string]string{}
		for _, p := range s.Parameters {
			got[p.Name] = *p.Value
		}
		if got["p"] != raw || got["h"] != "from http" || got["d"] != def || s.Result == nil || *s.Result != "result-line\n" {
			t.Errorf("parameters %v, result %v", got, s.Result)
		}
		if len(s.Artifacts) != 1 || s.Artifacts[0].Key != "ns/wf/uid/node/dir" || s.Logs == nil {
			t.Errorf("artifacts %+v, logs %+v", s.Artifacts, s.Logs)
		}
		as.mu.Lock()
		logs, dir := string(as.stored["ok/main-logs"]), as.stored["ok/dir"]
		as.mu.Unlock()
		if !strings.Contains(logs, "result-line") || len(dir) == 0 {
			t.Errorf("stored log %q, artifact %d bytes", logs, len(dir))
		}
	})

	t.Run("staging fails", func(t *testing.T) {
		e.Run(context.Background(), stepTG("nostage", "echo started > started", &v4.StepIO{
			Inputs: []v4.StepInput{{Name: "missing", Path: "/in/x", Key: "k"}}}))
		st := rec.waitPhase(t, "nostage", v4.StatusFailed)
		if st.Step == nil || !st.Step.Collected || !strings.HasPrefix(st.Step.Error, "stage input missing: ") ||
			!strings.Contains(st.Step.Error, "is not stored") {
			t.Fatalf("step %+v", st.Step)
		}
		if _, err := os.Stat(filepath.Join(PodDir(e.cfg.DataDir, testNS, "nostage"), "work", "started")); err == nil {
			t.Error("the task started although staging failed")
		}
	})

	t.Run("planted link", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "shadow")
		os.WriteFile(secret, []byte("root:secret"), 0o600)
		e.Run(context.Background(), stepTG("link", "ln -s "+secret+" out; ln -s /proc/1/root"+secret+" out2; exit 3", &v4.StepIO{
			Parameters: []v4.StepParameter{{Name: "p", Path: "/out"}}, Result: true}))
		st := rec.waitPhase(t, "link", v4.StatusFailed)
		if st.Step == nil || st.Step.ExitCode != 3 || !strings.Contains(st.Step.Error, "output parameter p") {
			t.Fatalf("step %+v", st.Step)
		}
		for _, p := range st.Step.Parameters {
			if strings.Contains(*p.Value, "secret") {
				t.Fatal("read through the link")
			}
		}
	})
}
