package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Shape of the workflow benchmarks (docs/benchmarks.md, "Workflows"): simulated nodes
// whose steps run for wfStepTime, a fan-out/fan-in DAG of wfFanOut steps between two, a
// chain of wfChain steps for the step-to-step transitions, and wfMany one-step
// workflows submitted at once, twice, then the server idle with them all retained.
const (
	wfNodes       = 50
	wfStepTime    = 200 * time.Millisecond
	wfFanOut      = 10_000
	wfChain       = 100
	wfMany        = 5_000
	wfSubmitters  = 16
	wfIdleMeasure = 30 * time.Second
)

// wfBenchFlags are the server's: finished workflows move into the workflow archive
// three minutes after they ended (after the last burst's waits), and events live the
// shortest TTL, so the settled server holds what retaining the workflows costs, not the
// last hour's events of the bursts (bounded by their own limits: docs/operations.md,
// "Events").
var wfBenchFlags = []string{"--workflow-archive-after", "3m", "--event-ttl", "1m"}

// BenchmarkWorkflows measures the workflow controller against `berth sim` nodes on a
// server built without the race detector:
//
//	go test -count=1 -run XXX -bench '^BenchmarkWorkflows$' -benchtime 1x -v -timeout 60m ./test/e2e/
func BenchmarkWorkflows(b *testing.B) {
	requireRoot(b)
	bin := buildPlain(b)
	s := startBerthBinary(b, bin, b.TempDir(), "server", wfBenchFlags...)
	s.startSimBinary(b, bin, "--nodes", strconv.Itoa(wfNodes), "--ramp", "5s", "--run-time", wfStepTime.String())
	s.waitNodes(b, wfNodes)
	pid := s.cmd.Process.Pid
	time.Sleep(10 * time.Second) // the nodes' first reports settle
	idleCPU0, idleRSS0 := s.idleUsage(b, pid, wfIdleMeasure)
	b.Logf("idle before any workflow: %.2f CPU-seconds per second, RSS %d MB; %s", idleCPU0, idleRSS0>>20, s.memoryOf(b))

	b.Run("fan-out-10000", func(b *testing.B) {
		for i := range b.N {
			name := fmt.Sprintf("fan-%d", i)
			took := s.runWorkflow(b, fanOutWorkflow(name, wfFanOut), 20*time.Minute)
			critical := 3 * wfStepTime
			b.ReportMetric(took.Seconds(), "s")
			b.ReportMetric((took - critical).Seconds(), "s-over-critical-path")
			b.Logf("%d-step fan-out/fan-in DAG: %s (critical path %s)", wfFanOut+2, took.Round(time.Millisecond), critical)
		}
	})
	b.Run("chain-transitions", func(b *testing.B) {
		for i := range b.N {
			name := fmt.Sprintf("chain-%d", i)
			took := s.runWorkflow(b, chainWorkflow(name, wfChain), 10*time.Minute)
			nodes := s.workflowNodes(b, "bench", name)
			gaps := transitions(b, nodes, wfChain)
			p50, p99 := gaps[len(gaps)/2], gaps[len(gaps)*99/100]
			b.ReportMetric(float64(p50.Milliseconds()), "transition-p50-ms")
			b.ReportMetric(float64(p99.Milliseconds()), "transition-p99-ms")
			b.Logf("chain of %d steps: %s; transitions (a step's exit to the next one's node) p50 %s, p99 %s, max %s",
				wfChain, took.Round(time.Millisecond), p50, p99, gaps[len(gaps)-1])
			runs := s.runningTransitions(b, "bench", name, nodes, wfChain)
			r50, r99 := runs[len(runs)/2], runs[len(runs)*99/100]
			b.ReportMetric(float64(r50.Milliseconds()), "exit-to-running-p50-ms")
			b.ReportMetric(float64(r99.Milliseconds()), "exit-to-running-p99-ms")
			b.Logf("a step's exit to the next step's tasks running on their node: p50 %s, p99 %s, max %s", r50, r99, runs[len(runs)-1])
		}
	})
	b.Run("one-step-5000", func(b *testing.B) {
		for i := range b.N {
			took := s.submitMany(b, "bench", fmt.Sprintf("many%d", i), wfMany, 20*time.Minute)
			b.ReportMetric(float64(wfMany)/took.Seconds(), "workflows/s")
			b.Logf("%d one-step workflows submitted at once: all Succeeded in %s, %.0f workflows/s",
				wfMany, took.Round(time.Millisecond), float64(wfMany)/took.Seconds())
		}
	})
	// Retained: 10,000 finished one-step workflows (and the runs above); the second
	// 5,000 in a namespace of their own, as a namespace holds at most 10,000 objects.
	s.submitMany(b, "bench-retained", "retained", wfMany, 20*time.Minute)
	time.Sleep(10 * time.Second)
	idleCPU1, idleRSS1 := s.idleUsage(b, pid, wfIdleMeasure)
	b.Logf("idle with %d finished workflows retained: %.2f CPU-seconds per second (%.2f before), RSS %d MB (%d MB before); %s",
		2*wfMany, idleCPU1, idleCPU0, idleRSS1>>20, idleRSS0>>20, s.memoryOf(b))
	b.ReportMetric(idleCPU1, "idle-cpu-retained")
	b.ReportMetric(float64(idleRSS1-idleRSS0)/(1<<20), "idle-rss-growth-MB")
	s.settled(b, bin, idleRSS0)
}

// settled measures the idle server again once the burst's changes left the caches'
// history (five minutes) and etcd's history was compacted (two compaction intervals,
// five minutes each) and its file defragmented: what is left is what the retained
// workflows hold, and the heap the burst left in pieces. Then, restarted, what they
// cost a server that never saw the burst. Only when BERTH_BENCH_SETTLE says how long
// to wait.
func (s *devServer) settled(b *testing.B, bin string, idleRSS0 int64) {
	settle := benchSettle(b)
	if settle <= 0 {
		s.saveHeapProfile(b, "")
		return
	}
	time.Sleep(settle)
	b.Logf("archived: %d workflows of bench, %d of bench-retained; stored: %d of bench", s.countArchived(b, "bench"),
		s.countArchived(b, "bench-retained"), s.countWorkflows(b, "bench", "", ""))
	cpu, rss := s.idleUsage(b, s.cmd.Process.Pid, wfIdleMeasure)
	b.Logf("settled %s later: %.2f CPU-seconds per second, RSS %d MB (%d MB before any workflow); %s",
		settle, cpu, rss>>20, idleRSS0>>20, s.memoryOf(b))
	b.ReportMetric(cpu, "settled-cpu-retained")
	b.ReportMetric(float64(rss-idleRSS0)/(1<<20), "settled-rss-growth-MB")
	if s.saveHeapProfile(b, "") { // it collected the garbage first
		_, rss := s.idleUsage(b, s.cmd.Process.Pid, time.Second)
		b.Logf("after a collection: RSS %d MB; %s", rss>>20, s.memoryOf(b))
	}
	// etcd maps its whole file when it starts (MAP_POPULATE): an operator's recover
	// (compaction, defragmentation) first returns the free pages the archive left there.
	s.recoverSpace(b)
	s.stop()
	again := startBerthAt(b, bin, strings.TrimPrefix(s.url, "https://"), s.dataDir, "server", wfBenchFlags...)
	again.waitNodes(b, wfNodes)
	time.Sleep(30 * time.Second) // the nodes' reports settle, as before the first measure
	cpu, rss = again.idleUsage(b, again.cmd.Process.Pid, wfIdleMeasure)
	b.Logf("restarted with the workflows retained: %.2f CPU-seconds per second, RSS %d MB (%d MB before any workflow); %s",
		cpu, rss>>20, idleRSS0>>20, again.memoryOf(b))
	b.ReportMetric(float64(rss-idleRSS0)/(1<<20), "restarted-rss-growth-MB")
	again.saveHeapProfile(b, ".restarted")
}

// benchSettle is how long the benchmark waits after the burst before it measures the
// idle server again (BERTH_BENCH_SETTLE, a Go duration; none when unset).
func benchSettle(b *testing.B) time.Duration {
	v := os.Getenv("BERTH_BENCH_SETTLE")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("BERTH_BENCH_SETTLE: %v", err)
	}
	return d
}

// wfStep is the process every benchmark step runs (the simulated nodes run nothing).
const wfStep = `{"name":"step","process":{"procName":"w","startCmd":"./w","resources":{"limits":{"cpu":"0.01","memory":"1"}}}}`

// fanOutWorkflow is a DAG: a, then n copies of b (a loop), then c.
func fanOutWorkflow(name string, n int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":"bench"},
	 "spec":{"entrypoint":"main","templates":[{"name":"main","dag":{"tasks":[
	  {"name":"a","template":"step"},
	  {"name":"b","template":"step","dependencies":["a"],"withSequence":{"count":"%d"}},
	  {"name":"c","template":"step","dependencies":["b"]}]}},%s]}}`, name, n, wfStep)
}

// chainWorkflow is a DAG of n steps, each depending on the one before; its task groups
// are kept (podGC Never), as they say when each step's tasks ran.
func chainWorkflow(name string, n int) string {
	tasks := `{"name":"t0","template":"step"}`
	for i := 1; i < n; i++ {
		tasks += fmt.Sprintf(`,{"name":"t%d","template":"step","dependencies":["t%d"]}`, i, i-1)
	}
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":"bench"},
	 "spec":{"entrypoint":"main","podGC":{"strategy":"Never"},"templates":[{"name":"main","dag":{"tasks":[%s]}},%s]}}`, name, tasks, wfStep)
}

// oneStepWorkflow is a workflow of one step.
func oneStepWorkflow(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":%q},
	 "spec":{"entrypoint":"step","templates":[%s]}}`, name, ns, wfStep)
}

// transitions are the chain's step-to-step gaps, sorted: when step i+1 started running
// after step i finished (both as its node records them).
func transitions(b *testing.B, nodes []v4.WfNodeStatus, n int) []time.Duration {
	b.Helper()
	byName := map[string]v4.WfNodeStatus{}
	for _, nd := range nodes {
		if nd.Type == v4.WfNodePod {
			byName[nd.DisplayName] = nd
		}
	}
	var gaps []time.Duration
	for i := 1; i < n; i++ {
		prev, ok1 := byName["t"+strconv.Itoa(i-1)]
		next, ok2 := byName["t"+strconv.Itoa(i)]
		if !ok1 || !ok2 || prev.FinishedAt.IsZero() || next.StartedAt.IsZero() {
			b.Fatalf("chain step t%d or t%d has no times", i-1, i)
		}
		gaps = append(gaps, next.StartedAt.Sub(prev.FinishedAt))
	}
	slices.Sort(gaps)
	return gaps
}

// submitMany creates n one-step workflows in ns at once (wfSubmitters at a time) and returns
// how long it took from the first submission until all of them succeeded.
func (s *devServer) submitMany(b *testing.B, ns, prefix string, n int, limit time.Duration) time.Duration {
	b.Helper()
	if n <= 0 {
		return 0
	}
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, wfSubmitters)
	for range wfSubmitters {
		wg.Go(func() {
			for i := range next {
				if err := s.postObject(ns, "workflows", oneStepWorkflow(ns, fmt.Sprintf("%s-%d", prefix, i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	s.waitWorkflowsDone(b, ns, prefix+"-", n, limit)
	return time.Since(start)
}
