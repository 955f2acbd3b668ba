package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
)

// Statuses that wait together go in one report; one the server does not have is handed
// to gone; a status that waits alone goes by itself.
func TestReporterBatchesWaitingStatuses(t *testing.T) {
	var (
		mu      sync.Mutex
		batches [][]string
		singles []string
		gone    []string
		release = make(chan struct{})
	)
	r := newReporter(func(_ context.Context, ns, name string, _ v4.TaskGroupStatus) error {
		<-release // the first send waits, so the next statuses pile up behind it
		mu.Lock()
		defer mu.Unlock()
		singles = append(singles, name)
		return nil
	}, func(_, name string) {
		mu.Lock()
		defer mu.Unlock()
		gone = append(gone, name)
	})
	r.sendMany = func(_ context.Context, ps []pendingStatus) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		var names []string
		for _, p := range ps {
			names = append(names, p.name)
		}
		batches = append(batches, names)
		return []string{tgKey("ns", "gone")}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	r.enqueue("ns", "first", v4.TaskGroupStatus{Phase: v4.StatusStarting})
	waitFor(t, "first taken", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.order) == 1 }) // taken by the single send
	time.Sleep(20 * time.Millisecond)
	for _, name := range []string{"a", "gone", "b"} {
		r.enqueue("ns", name, v4.TaskGroupStatus{Phase: v4.StatusRunning})
	}
	close(release)
	waitFor(t, "every status sent", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.order) == 0 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(singles) != 1 || singles[0] != "first" {
		t.Fatalf("sent alone: %v, want only first", singles)
	}
	if len(batches) != 1 || len(batches[0]) != 3 || batches[0][0] != "a" || batches[0][2] != "b" {
		t.Fatalf("batches: %v, want one of a, gone, b", batches)
	}
	if len(gone) != 1 || gone[0] != "gone" {
		t.Fatalf("gone: %v", gone)
	}
}

// Periodic reports carry what changed: with one pod Running and nothing changing, only
// every tenth report is sent (and carries the pod); the others are skipped.
func TestPeriodicReportsCarryChanges(t *testing.T) {
	c := newCluster(t)
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) { cfg.ReportInterval = 100 * time.Millisecond })
	runProcessTGs(t, "0.web.ns-a.c.1")
	time.Sleep(time.Second) // the reports of the start have gone

	var reports atomic.Int32
	count := func(r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/report") {
			reports.Add(1)
		}
	}
	c.seen.Store(&count)
	defer c.seen.Store(nil)
	start := time.Now()
	waitFor(t, "a full report", func() bool { return reports.Load() >= 1 })
	time.Sleep(3 * time.Second)
	intervals := int32(time.Since(start) / (100 * time.Millisecond))
	// One report in fullReportEvery intervals, give or take the one in progress; every
	// interval would have sent one before.
	if got, most := reports.Load(), intervals/fullReportEvery+2; got > most {
		t.Fatalf("%d reports in %d intervals with nothing changing, want at most %d", got, intervals, most)
	}
}
