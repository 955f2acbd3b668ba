package e2e

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
)

// Workflows against the real binary, on one cluster of three servers and one process
// agent (no Docker): the steps are process tasks that append their names to a file the
// test reads, so the order and the count of the runs are what the file says.

const wfNS = "e2ewf"

// wfEnv is the shared cluster of TestWorkflows.
type wfEnv struct {
	servers []*haServer
	cl      *devServer // the CLI with every live server
	dir     string     // where the steps write
}

// wfDoc is workflow name in wfNS with the given spec (JSON).
func wfDoc(name, spec string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":%q},"spec":%s}`, name, wfNS, spec)
}

// proc is a process template named name whose start command is cmd, run in e.dir. The
// agent knows a process by its procName (its executable): the shell, kept the process
// by the trailing exit (a last simple command would replace it).
func (e *wfEnv) proc(name, cmd string) string {
	return fmtSpec(`{"name":%q,"process":{"procName":"sh","startCmd":%q,"startGracePeriod":1,"resources":{"limits":{"cpu":"0.1","memory":"32"}}}}`,
		name, "cd "+e.dir+" && "+cmd+"; exit $?")
}

// live is a server of the cluster that answers.
func (e *wfEnv) live() *devServer { return e.servers[0].devServer }

// get reads workflow name.
func (e *wfEnv) get(t *testing.T, name string) *v4.Workflow {
	t.Helper()
	s := e.live()
	code, body := s.do(t, http.MethodGet, s.url+"/v1/namespaces/"+wfNS+"/workflows/"+name, "")
	if code != http.StatusOK {
		t.Fatalf("get workflow %s: %d %s", name, code, body)
	}
	var wf v4.Workflow
	if err := json.Unmarshal(body, &wf); err != nil {
		t.Fatal(err)
	}
	return &wf
}

// action posts an action on workflow name.
func (e *wfEnv) action(t *testing.T, name, action, body string) {
	t.Helper()
	s := e.live()
	code, out := s.do(t, http.MethodPost, s.url+"/v1/namespaces/"+wfNS+"/workflows/"+name+"/actions/"+action, body)
	if code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", action, name, code, out)
	}
}

// wait waits until workflow name has finished and returns it.
func (e *wfEnv) wait(t *testing.T, name string, limit time.Duration) *v4.Workflow {
	t.Helper()
	var wf *v4.Workflow
	waitUntil(t, limit, "workflow "+name+" to finish", func() bool {
		wf = e.get(t, name)
		return v4.WfPhaseFinished(wf.Status.Phase)
	})
	return wf
}

// lines are the lines the steps wrote to file.
func (e *wfEnv) lines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, file))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// writable makes files the steps (unprivileged users of the agent's) append to.
func writable(t *testing.T, dir string, files ...string) {
	t.Helper()
	passable(t, filepath.Join(dir, "x"))
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWorkflows(t *testing.T) {
	requireRoot(t)
	servers := startCluster(t)
	e := &wfEnv{servers: servers, cl: allOf(t, servers), dir: t.TempDir()}
	writable(t, e.dir, "steps", "dag", "dag-params", "retry", "exit", "suspend", "again", "ha")
	others := []string{"--server", servers[1].url + "," + servers[2].url, "--docker", "off"}
	startAgent(t, servers[0].devServer, "wf", haPortRange(t, 34700, 34749, 10), others...)
	e.cl.cleanupOwners(wfNS, "workflows", 60*time.Second)

	t.Run("steps", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("steps", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"a","template":"a"},{"name":"b","template":"b"}],[{"name":"c","template":"c"}]]},`+
			e.proc("a", "echo a >> steps")+","+e.proc("b", "echo b >> steps")+","+e.proc("c", "echo c >> steps")+`]}`))
		wf := e.wait(t, "steps", 90*time.Second)
		got := e.lines(t, "steps")
		if wf.Status.Phase != v4.WfSucceeded || wf.Status.Progress != "3/3" || len(got) != 3 || got[2] != "c" {
			t.Fatalf("%s %q %q, steps ran: %v", wf.Status.Phase, wf.Status.Message, wf.Status.Progress, got)
		}
		// The nodes hold the steps' record: their task groups go (podGC's default).
		waitUntil(t, 30*time.Second, "the steps' task groups deleted", func() bool { return len(e.cl.taskGroups(wfNS, "steps")) == 0 })
		for _, n := range wf.Status.Nodes {
			if n.Type == v4.WfNodePod && (n.Outputs == nil || n.Outputs.ExitCode == nil || n.FinishedAt.IsZero()) {
				t.Errorf("step %s has no record: %+v", n.Name, n)
			}
		}
	})

	t.Run("dag", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("dag", `{"entrypoint":"main","templates":[
		 {"name":"main","dag":{"tasks":[{"name":"A","template":"A"},{"name":"B","template":"B","dependencies":["A"]},
		  {"name":"C","template":"C","dependencies":["A"]},{"name":"D","template":"D","dependencies":["B","C"]}]}},`+
			e.proc("A", "echo A >> dag")+","+e.proc("B", "echo B >> dag")+","+e.proc("C", "echo C >> dag")+","+e.proc("D", "echo D >> dag")+`]}`))
		wf := e.wait(t, "dag", 90*time.Second)
		got := e.lines(t, "dag")
		if wf.Status.Phase != v4.WfSucceeded || len(got) != 4 || got[0] != "A" || got[3] != "D" {
			t.Fatalf("%s %q, tasks ran: %v", wf.Status.Phase, wf.Status.Message, got)
		}
	})

	t.Run("dag parameters", func(t *testing.T) {
		// A writes an output parameter to a file, S is a script on the node whose stdout is
		// its result; B gets both as arguments.
		gen := fmtSpec(`{"name":"gen","outputs":{"parameters":[{"name":"x","valueFrom":{"path":"/out.txt"}}]},`+
			`"process":{"procName":"sh","startCmd":%q,"startGracePeriod":1}}`, "printf hello > out.txt; exit $?")
		script := `{"name":"calc","script":{"command":["sh"],"source":"echo 42"}}`
		use := fmtSpec(`{"name":"use","inputs":{"parameters":[{"name":"a"},{"name":"b"}]},`+
			`"process":{"procName":"sh","startCmd":%q,"startGracePeriod":1}}`, "cd "+e.dir+" && echo {{inputs.parameters.a}}-{{inputs.parameters.b}} >> dag-params; exit $?")
		e.cl.applySpec(t, wfDoc("params", `{"entrypoint":"main","templates":[
		 {"name":"main","dag":{"tasks":[{"name":"A","template":"gen"},{"name":"S","template":"calc"},
		  {"name":"B","template":"use","dependencies":["A","S"],"arguments":{"parameters":[
		   {"name":"a","value":"{{tasks.A.outputs.parameters.x}}"},{"name":"b","value":"{{tasks.S.outputs.result}}"}]}}]}},`+
			gen+","+script+","+use+`]}`))
		wf := e.wait(t, "params", 90*time.Second)
		if got := e.lines(t, "dag-params"); wf.Status.Phase != v4.WfSucceeded || len(got) != 1 || got[0] != "hello-42" {
			t.Fatalf("%s %q, B wrote %v", wf.Status.Phase, wf.Status.Message, got)
		}
	})

	t.Run("retried step", func(t *testing.T) {
		flaky := `{"name":"flaky","retryStrategy":{"limit":2},"process":{"procName":"sh","startGracePeriod":1,"startCmd":` +
			fmt.Sprintf("%q", "cd "+e.dir+" && echo try >> retry && [ $(wc -l < retry) -ge 2 ]; exit $?") + `}}`
		e.cl.applySpec(t, wfDoc("retried", `{"entrypoint":"flaky","templates":[`+flaky+`]}`))
		wf := e.wait(t, "retried", 90*time.Second)
		if wf.Status.Phase != v4.WfSucceeded || len(e.lines(t, "retry")) != 2 {
			t.Fatalf("%s %q after %v", wf.Status.Phase, wf.Status.Message, e.lines(t, "retry"))
		}
	})

	t.Run("exit handler on failure", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("failing", `{"entrypoint":"main","onExit":"bye","templates":[`+
			e.proc("main", "exit 3")+","+e.proc("bye", "echo {{workflow.status}} >> exit")+`]}`))
		wf := e.wait(t, "failing", 90*time.Second)
		if got := e.lines(t, "exit"); wf.Status.Phase != v4.WfFailed || len(got) != 1 || got[0] != "Failed" {
			t.Fatalf("%s %q, the exit handler wrote %v", wf.Status.Phase, wf.Status.Message, got)
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("paused", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"wait","template":"wait"}],[{"name":"go","template":"go"}]]},
		 {"name":"wait","suspend":{}},`+e.proc("go", "echo go >> suspend")+`]}`))
		waitUntil(t, 30*time.Second, "the suspend step", func() bool { return suspended(e.get(t, "paused")) })
		time.Sleep(time.Second)
		if got := e.lines(t, "suspend"); len(got) != 0 {
			t.Fatalf("ran before the resume: %v", got)
		}
		e.action(t, "paused", "resume", "")
		if wf := e.wait(t, "paused", 60*time.Second); wf.Status.Phase != v4.WfSucceeded || len(e.lines(t, "suspend")) != 1 {
			t.Fatalf("%s %q", wf.Status.Phase, wf.Status.Message)
		}
	})

	t.Run("retry reuses succeeded steps", func(t *testing.T) {
		e.cl.applySpec(t, wfDoc("again", `{"entrypoint":"main","templates":[
		 {"name":"main","steps":[[{"name":"first","template":"first"}],[{"name":"second","template":"second"}]]},`+
			e.proc("first", "echo first >> again")+","+e.proc("second", "echo second >> again && [ -f ok ]")+`]}`))
		if wf := e.wait(t, "again", 90*time.Second); wf.Status.Phase != v4.WfFailed {
			t.Fatalf("%s, want Failed", wf.Status.Phase)
		}
		if err := os.WriteFile(filepath.Join(e.dir, "ok"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		e.action(t, "again", "retry", "")
		wf := e.wait(t, "again", 90*time.Second)
		if got := e.lines(t, "again"); wf.Status.Phase != v4.WfSucceeded || strings.Count(strings.Join(got, " "), "first") != 1 || len(got) != 3 {
			t.Fatalf("%s %q, ran: %v", wf.Status.Phase, wf.Status.Message, got)
		}
	})

	t.Run("leader killed mid-DAG", func(t *testing.T) {
		// podGC Never: the task groups are counted at the end.
		e.cl.applySpec(t, wfDoc("ha", `{"entrypoint":"main","podGC":{"strategy":"Never"},"templates":[
		 {"name":"main","dag":{"tasks":[{"name":"A","template":"A"},{"name":"B","template":"B","dependencies":["A"]},
		  {"name":"C","template":"C","dependencies":["A"]},{"name":"D","template":"D","dependencies":["B","C"]}]}},`+
			e.proc("A", "echo A >> ha && sleep 2")+","+e.proc("B", "echo B >> ha && sleep 3")+","+
			e.proc("C", "echo C >> ha && sleep 3")+","+e.proc("D", "echo D >> ha")+`]}`))
		deadline := time.Now().Add(60 * time.Second)
		for len(e.lines(t, "ha")) < 3 {
			if time.Now().After(deadline) {
				b, _ := json.MarshalIndent(e.get(t, "ha").Status, "", " ")
				t.Fatalf("B and C did not start; ran %v; status %s", e.lines(t, "ha"), b)
			}
			time.Sleep(200 * time.Millisecond)
		}
		leader, _ := leaderOf(t, e.servers)
		leader.cmd.Process.Kill()
		<-leader.exited
		e.servers = othersThan(e.servers, leader)
		leaderOf(t, e.servers)
		wf := e.wait(t, "ha", 120*time.Second)
		got := e.lines(t, "ha")
		if wf.Status.Phase != v4.WfSucceeded || strings.Join(got, " ") != "A B C D" && strings.Join(got, " ") != "A C B D" {
			t.Fatalf("%s %q, ran: %v (each step once)", wf.Status.Phase, wf.Status.Message, got)
		}
		if tgs := allOf(t, e.servers).taskGroups(wfNS, "ha"); len(tgs) != 4 {
			t.Errorf("%d task groups for 4 steps", len(tgs))
		}
		e.cl = allOf(t, e.servers) // the cleanup goes through the live servers
	})
}

// suspended reports whether a workflow has a Suspend node waiting.
func suspended(wf *v4.Workflow) bool {
	for _, n := range wf.Status.Nodes {
		if n.Type == v4.WfNodeSuspend && n.Phase == v4.WfRunning {
			return true
		}
	}
	return false
}
