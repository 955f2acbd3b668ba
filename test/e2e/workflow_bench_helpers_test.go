package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// startSimBinary runs `berth sim` of bin against s with the cluster's join token and
// args, until the benchmark ends.
func (s *devServer) startSimBinary(b *testing.B, bin string, args ...string) {
	b.Helper()
	var logs bytes.Buffer
	sim := exec.Command(bin, append([]string{"sim", "--server", s.url, "--token", joinTokenOf(b, s.dataDir), "--data-dir", b.TempDir()}, args...)...)
	sim.Env = s.cliEnv(b)
	sim.Stdout, sim.Stderr = &logs, &logs
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	simDone := make(chan struct{})
	go func() { sim.Wait(); close(simDone) }()
	b.Cleanup(func() {
		sim.Process.Kill()
		<-simDone
		if b.Failed() {
			b.Logf("berth sim output:\n%s", logs.String())
		}
	})
}

// waitNodes waits (2 minutes at most) for n registered nodes.
func (s *devServer) waitNodes(b *testing.B, n int) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for s.totalOf(b, "/v1/nodes") < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("%d nodes did not register in 2 minutes", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// idleUsage is pid's CPU time per second over d, and its RSS at the end.
func (s *devServer) idleUsage(b *testing.B, pid int, d time.Duration) (float64, int64) {
	b.Helper()
	before := cpuTimeOf(b, pid)
	time.Sleep(d)
	return (cpuTimeOf(b, pid) - before).Seconds() / d.Seconds(), rssOf(b, pid)
}

// cpuTimeOf is a process's user and system CPU time (from /proc, in clock ticks of 10 ms).
func cpuTimeOf(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command (which may hold spaces) in parentheses.
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		b.Fatalf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// postObject creates an object of plural in ns from its JSON.
func (s *devServer) postObject(ns, plural, body string) error {
	resp, err := s.http.Post(s.url+"/v1/namespaces/"+ns+"/"+plural, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("POST %s: %s: %s", plural, resp.Status, msg)
	}
	return nil
}

// workflow reads a workflow (nil when it cannot).
func (s *devServer) workflow(ns, name string) *v4.Workflow {
	var wf v4.Workflow
	if s.apiGet("/v1/namespaces/"+ns+"/workflows/"+name, &wf) != nil || wf.Metadata.Name == "" {
		return nil
	}
	return &wf
}

// runWorkflow creates a workflow from its JSON and returns how long it took to succeed
// (failing the benchmark when it ends otherwise or takes longer than limit).
func (s *devServer) runWorkflow(b *testing.B, spec string, limit time.Duration) time.Duration {
	b.Helper()
	var meta struct{ Metadata v4.ObjectMeta }
	if err := json.Unmarshal([]byte(spec), &meta); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := s.postObject(meta.Metadata.Namespace, "workflows", spec); err != nil {
		b.Fatal(err)
	}
	for time.Since(start) < limit {
		if wf := s.workflow(meta.Metadata.Namespace, meta.Metadata.Name); wf != nil && v4.WfPhaseFinished(wf.Status.Phase) {
			if wf.Status.Phase != v4.WfSucceeded {
				b.Fatalf("workflow %s ended %s: %s", meta.Metadata.Name, wf.Status.Phase, wf.Status.Message)
			}
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("workflow %s did not end within %s", meta.Metadata.Name, limit)
	return 0
}

// workflowNodes reads all of a workflow's nodes through the nodes route, page by page.
func (s *devServer) workflowNodes(b *testing.B, ns, name string) []v4.WfNodeStatus {
	b.Helper()
	var all []v4.WfNodeStatus
	token := ""
	for range 1000 {
		var page struct {
			Items    []v4.WfNodeStatus `json:"items"`
			Continue string            `json:"continue"`
		}
		path := fmt.Sprintf("/v1/namespaces/%s/workflows/%s/nodes?limit=5000&continue=%s", ns, name, url.QueryEscape(token))
		if err := s.apiGet(path, &page); err != nil {
			b.Fatalf("nodes of %s: %v", name, err)
		}
		all = append(all, page.Items...)
		if token = page.Continue; token == "" {
			return all
		}
	}
	b.Fatalf("nodes of %s: more than 1000 pages", name)
	return nil
}

// waitWorkflowsDone waits until n workflows of ns whose names start with prefix have
// succeeded, failing the benchmark when one fails or limit passes.
func (s *devServer) waitWorkflowsDone(b *testing.B, ns, prefix string, n int, limit time.Duration) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for {
		if failed := s.countWorkflows(b, ns, prefix, v4.WfFailed); failed > 0 {
			b.Fatalf("%d workflows %s... failed", failed, prefix)
		}
		if s.countWorkflows(b, ns, prefix, v4.WfSucceeded) >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d workflows %s... did not all succeed within %s", n, prefix, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// countWorkflows counts the workflows of ns in phase whose names contain q, page by
// page: the list route gives no total of a filtered list (reading everything to count
// is what it leaves to its caller), and a page holds at most 500 objects.
func (s *devServer) countWorkflows(b *testing.B, ns, q, phase string) int64 {
	b.Helper()
	var n int64
	token := ""
	for range 1000 {
		var page struct {
			Items    []json.RawMessage
			Continue string
		}
		path := "/v1/namespaces/" + ns + "/workflows?limit=500&q=" + url.QueryEscape(q) + "&phase=" + phase + "&continue=" + url.QueryEscape(token)
		if err := s.apiGet(path, &page); err != nil {
			b.Fatalf("GET %s: %v", path, err)
		}
		n += int64(len(page.Items))
		if page.Continue == "" {
			return n
		}
		token = page.Continue
	}
	b.Fatalf("workflows of %s: more than 1,000 pages", ns)
	return n
}

// countArchived counts the archived workflows of ns, page by page.
func (s *devServer) countArchived(b *testing.B, ns string) int {
	b.Helper()
	n, token := 0, ""
	for range 1000 {
		var page struct {
			Items    []json.RawMessage
			Continue string
		}
		path := "/v1/namespaces/" + ns + "/archivedworkflows?limit=1000&continue=" + url.QueryEscape(token)
		if err := s.apiGet(path, &page); err != nil {
			b.Fatalf("GET %s: %v", path, err)
		}
		n += len(page.Items)
		if page.Continue == "" {
			return n
		}
		token = page.Continue
	}
	b.Fatalf("archived workflows of %s: more than 1,000 pages", ns)
	return n
}

// recoverSpace asks the server to compact and defragment etcd (POST /v1/cluster/recover)
// and logs the file's size before and after.
func (s *devServer) recoverSpace(b *testing.B) {
	b.Helper()
	resp, err := s.http.Post(s.url+"/v1/cluster/recover", "application/json", nil)
	if err != nil {
		b.Fatalf("recover: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Members []struct{ SizeBefore, InUseBefore, SizeAfter int64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Members) == 0 {
		b.Fatalf("recover: %d %v %+v", resp.StatusCode, err, out)
	}
	m := out.Members[0]
	b.Logf("etcd defragmented: file %d MB (%d MB in use) → %d MB", m.SizeBefore>>20, m.InUseBefore>>20, m.SizeAfter>>20)
}

// runningTransitions are a chain's gaps as its nodes' task groups report them, sorted:
// from step i's exit on its node to step i+1's tasks running on theirs — the whole
// transition: the report, the controller's pass, placement, the node's start.
func (s *devServer) runningTransitions(b *testing.B, ns, name string, nodes []v4.WfNodeStatus, n int) []time.Duration {
	b.Helper()
	var page struct{ Items []*v4.TaskGroup }
	path := fmt.Sprintf("/v1/namespaces/%s/taskgroups?limit=%d&owner=%s", ns, 2*n, url.QueryEscape("workflow/"+name))
	if err := s.apiGet(path, &page); err != nil {
		b.Fatalf("task groups of %s: %v", name, err)
	}
	names := map[string]string{} // node ID -> display name
	for _, nd := range nodes {
		names[nd.ID] = nd.DisplayName
	}
	byName := map[string]*v4.TaskGroup{}
	for _, tg := range page.Items {
		if tg.Spec.Step != nil {
			byName[names[tg.Spec.Step.NodeID]] = tg
		}
	}
	var gaps []time.Duration
	for i := 1; i < n; i++ {
		prev, next := byName["t"+strconv.Itoa(i-1)], byName["t"+strconv.Itoa(i)]
		if prev == nil || next == nil || prev.Status.FinishedAt.IsZero() || next.Status.StartedAt.IsZero() {
			b.Fatalf("chain step t%d or t%d has no task group with times", i-1, i)
		}
		gaps = append(gaps, next.Status.StartedAt.Sub(prev.Status.FinishedAt))
	}
	slices.Sort(gaps)
	return gaps
}

// metricOf reads one sample of a Prometheus metric (the first line naming it) from the
// server's metrics route path (/metrics, /metrics/etcd); -1 when it is not there.
func (s *devServer) metricOf(b *testing.B, path, name string) float64 {
	b.Helper()
	resp, err := s.http.Get(s.url + path)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// memoryOf says where a server's memory is: its resident anonymous memory (heap, stacks)
// and file pages (etcd's database once read), the Go heap in use and allocated (live,
// and garbage not yet collected), and the embedded etcd's database size.
func (s *devServer) memoryOf(b *testing.B) string {
	b.Helper()
	pid := s.cmd.Process.Pid
	return fmt.Sprintf("RSS anonymous %.0f MB, file %.0f MB; Go heap in use %.0f MB, allocated %.0f MB; etcd database %.0f MB (%.0f MB in use)",
		anonMB(pid), statusMB(pid, "RssFile:"),
		s.metricOf(b, "/metrics", "go_memstats_heap_inuse_bytes")/(1<<20),
		s.metricOf(b, "/metrics", "go_memstats_heap_alloc_bytes")/(1<<20),
		s.metricOf(b, "/metrics/etcd", "etcd_mvcc_db_total_size_in_bytes")/(1<<20),
		s.metricOf(b, "/metrics/etcd", "etcd_mvcc_db_total_size_in_use_in_bytes")/(1<<20))
}

// saveHeapProfile writes the server's heap profile to the file BERTH_BENCH_HEAP names,
// when it names one (`go tool pprof` reads it: what the retained workflows hold), and
// says whether it did.
func (s *devServer) saveHeapProfile(b *testing.B, suffix string) bool {
	b.Helper()
	path := os.Getenv("BERTH_BENCH_HEAP")
	if path != "" {
		path += suffix
	}
	if path == "" {
		return false
	}
	resp, err := s.http.Get(s.url + "/v1/debug/pprof/heap?gc=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("heap profile: %d %v", resp.StatusCode, err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("heap profile written to %s", path)
	return true
}
