package e2e

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// soakFor is how long TestSoak loads the server: a minute under `make test`, longer with
// `make soak` (SOAK=3m by default) or -soak=30m.
var soakFor = flag.Duration("soak", time.Minute, "how long TestSoak loads the server")

// The bounds the soak holds berth to (docs/benchmarks.md, Soak). A sample beyond one
// fails the test.
const (
	// The server's heap (anonymous memory): about 100 MB steady under this load; a
	// defragmentation of the embedded etcd briefly holds the data in use (about 130 MB
	// here) two to three times over.
	soakMaxHeapMB = 500
	// The server's resident memory: the heap and the pages of etcd's database file that
	// it maps (the file is bounded below).
	soakMaxRSSMB   = 800
	soakMaxDBMB    = 512  // the embedded etcd's database file
	soakMaxEvents  = 5000 // stored events
	soakMaxApplyMs = 3000 // p99 of one interval's applies
	soakSample     = 5 * time.Second
)

// TestSoak runs the hostile and careless users of docs/operations.md together against a
// real `berth server` and agent: a process that crash-loops, a process scaled to the
// instance limit, ten watch clients that never read, one that reads everything, and a
// flood of 100 KB configmap applies. It prints the server's memory, etcd's size, the event
// count and apply latency over time, and fails when a bound is broken or a normal
// operation fails.
func TestSoak(t *testing.T) {
	requireRoot(t)
	bin := buildPlain(t)
	dataDir := t.TempDir()
	// History is compacted every 30 s: the flood writes about 2 MB/s of configmaps, which
	// the default 5-minute interval would keep as history for a while.
	s := startBerthBinary(t, bin, dataDir, "server", "--join-token", joinToken, "--etcd-compaction-interval", "30s")
	startAgent(t, s, "soak-a", "23500-23599")
	defer s.cleanupProcesses("soak")

	s.applySpec(t, soakProcess("crashy", "sh", `"exit 3"`, "0.05"))
	s.applySpec(t, soakProcess("big", "sleep", `"sleep 3600"`, "1"))
	s.running(t, "soak", "big", 1)
	if out := s.mustBerth("scale", "process", "big", fmt.Sprint(v4.MaxInstances), "-n", "soak"); !strings.Contains(out, "big") {
		t.Fatalf("scale to the limit: %s", out)
	}

	var slow []net.Conn
	for range 10 {
		slow = append(slow, slowWatcher(t, s))
	}
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), *soakFor)
	defer cancel()
	var (
		wg        sync.WaitGroup
		lat       latencies
		failed    atomic.Int64
		lastErr   atomic.Value
		watched   atomic.Int64
		watchErr  = make(chan error, 1)
		violation []string
	)
	wg.Go(func() { watchErr <- readWatch(ctx, s, &watched) })
	for w := range 4 {
		wg.Go(func() { floodApplies(ctx, s, w, 100<<10, 200*time.Millisecond, &lat, &failed, &lastErr) })
	}

	t.Logf("%-6s %8s %8s %8s %7s %6s %9s %9s", "t", "rss MB", "heap MB", "db MB", "events", "apps", "p50 ms", "p99 ms")
	start := time.Now()
	tick := time.NewTicker(soakSample)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
		}
		rss, heap, db := rssMB(s.cmd.Process.Pid), anonMB(s.cmd.Process.Pid), dbMB(dataDir)
		events, err := countEvents(s)
		if err != nil {
			violation = append(violation, err.Error())
		}
		ds := lat.take()
		p50, p99 := percentile(ds, 0.5), percentile(ds, 0.99)
		t.Logf("%-6s %8.0f %8.0f %8.1f %7d %6d %9d %9d", time.Since(start).Round(time.Second), rss, heap, db, events, len(ds), p50.Milliseconds(), p99.Milliseconds())
		switch {
		case heap > soakMaxHeapMB:
			violation = append(violation, fmt.Sprintf("server heap %.0f MB > %d MB", heap, soakMaxHeapMB))
		case rss > soakMaxRSSMB:
			violation = append(violation, fmt.Sprintf("server RSS %.0f MB > %d MB", rss, soakMaxRSSMB))
		case db > soakMaxDBMB:
			violation = append(violation, fmt.Sprintf("etcd database %.0f MB > %d MB", db, soakMaxDBMB))
		case events > soakMaxEvents:
			violation = append(violation, fmt.Sprintf("%d events stored > %d", events, soakMaxEvents))
		case p99 > soakMaxApplyMs*time.Millisecond:
			violation = append(violation, fmt.Sprintf("apply p99 %s > %d ms", p99, soakMaxApplyMs))
		}
		if code, _, err := s.httpGet(s.url + "/v1/namespaces/soak/processes/big"); err != nil || code != http.StatusOK {
			violation = append(violation, fmt.Sprintf("GET of the scaled process: %d %v", code, err))
		}
	}
	tick.Stop()
	wg.Wait()
	all := lat.all
	t.Logf("applies: %d ok (p50 %s, p99 %s), %d failed; the reading watcher got %d lines",
		len(all), percentile(all, 0.5), percentile(all, 0.99), failed.Load(), watched.Load())

	if n := failed.Load(); n > 0 {
		violation = append(violation, fmt.Sprintf("%d applies failed, the last: %v", n, lastErr.Load()))
	}
	if err := <-watchErr; err != nil {
		violation = append(violation, err.Error())
	}
	if watched.Load() < int64(len(all))/2 {
		violation = append(violation, fmt.Sprintf("the reading watcher got %d lines for %d applies", watched.Load(), len(all)))
	}
	violation = append(violation, checkCrashLoop(s, time.Since(start))...)
	// The server has ended every stream of the clients that never read (at the latest
	// 30 s after a write waited on them).
	for i, c := range slow {
		if last := lastLine(c); !strings.Contains(last, "EOF") && !strings.Contains(last, `"type":"ERROR"`) {
			violation = append(violation, fmt.Sprintf("slow watcher %d is still connected: %.200s", i, last))
		}
	}
	if len(violation) > 0 {
		t.Fatalf("soak bounds broken:\n  %s", strings.Join(violation, "\n  "))
	}
}

// soakProcess is a process of the soak namespace that runs cmd (a single command runs
// as procName, a shell builtin as "sh") with no restart policy (BCS's default:
// OnFailure, interval 0) and cpu cpus.
func soakProcess(name, procName, cmd, cpu string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"soak"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":%q,"startCmd":%s,
		"resources":{"limits":{"cpu":%q,"memory":"16"}}}]}}}}`, name, procName, cmd, cpu)
}

// checkCrashLoop checks the crash-looping process restarted no faster than the
// crash-loop floor allows (2 s, 4 s, 8 s … after each quick exit) over elapsed.
func checkCrashLoop(s *devServer, elapsed time.Duration) []string {
	tgs := s.taskGroups("soak", "crashy")
	if len(tgs) == 0 || len(tgs) > 2 {
		return []string{fmt.Sprintf("the crash-looping process has %d task groups, want 1 or 2", len(tgs))}
	}
	most := 0
	for wait := 2 * time.Second; elapsed > 0; wait = min(2*wait, 5*time.Minute) {
		elapsed -= wait
		most++
	}
	restarts := 0
	for _, tg := range tgs {
		restarts = max(restarts, tg.Spec.ReschedTimes)
	}
	if restarts < 1 || restarts > most+1 {
		return []string{fmt.Sprintf("the crash-looping process restarted %d times, want 1 to %d", restarts, most+1)}
	}
	return nil
}
