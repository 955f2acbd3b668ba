package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/driver/fake"
)

// Statuses that wait together go in one request, and each is answered: one the server
// does not have is handed to gone, one it refuses is dropped, one it answers with an
// error to retry stays pending and goes again. A status that waits alone goes by itself
// in the same way.
func TestReporterBatchesWaitingStatuses(t *testing.T) {
	var (
		mu      sync.Mutex
		batches [][]string
		gone    []string
		busy    = 1 // times "busy" is answered 503
		release = make(chan struct{})
		taken   = make(chan struct{})
	)
	r := newReporter(func(context.Context, string, string, v4.TaskGroupStatus) error {
		t.Error("a status went alone")
		return nil
	}, func(_, name string) {
		mu.Lock()
		defer mu.Unlock()
		gone = append(gone, name)
	})
	r.sendMany = func(_ context.Context, ps []pendingStatus) ([]v4.AgentStatusAnswer, error) {
		if len(batches) == 0 {
			close(taken)
			<-release // the first send waits, so the next statuses pile up behind it
		}
		mu.Lock()
		defer mu.Unlock()
		var names []string
		answers := make([]v4.AgentStatusAnswer, len(ps))
		for i, p := range ps {
			names = append(names, p.name)
			answers[i].Code = http.StatusOK
			switch {
			case p.name == "gone":
				answers[i].Code = http.StatusNotFound
			case p.name == "bad":
				answers[i].Code = http.StatusUnprocessableEntity
			case p.name == "busy" && busy > 0:
				busy--
				answers[i].Code = http.StatusServiceUnavailable
			}
		}
		batches = append(batches, names)
		return answers, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	r.enqueue("ns", "first", v4.TaskGroupStatus{Phase: v4.StatusStarting})
	<-taken
	for _, name := range []string{"a", "gone", "bad", "busy", "b"} {
		r.enqueue("ns", name, v4.TaskGroupStatus{Phase: v4.StatusRunning})
	}
	close(release)
	waitFor(t, "every status sent", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.order) == 0 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	want := [][]string{{"first"}, {"a", "gone", "bad", "busy", "b"}, {"busy"}}
	if !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches: %v, want %v", batches, want)
	}
	if len(gone) != 1 || gone[0] != "gone" {
		t.Fatalf("gone: %v", gone)
	}
}

// A server without the statuses route (an older one) gets several statuses in a report
// and one alone (errNoBatch: the reporter puts it), and is not asked again for a while.
func TestStatusBatchesOlderServer(t *testing.T) {
	var asked, reports int
	b := &statusBatches{
		statuses: func(context.Context, v4.AgentStatuses) (v4.AgentStatusesResult, error) {
			asked++
			return v4.AgentStatusesResult{}, &client.APIError{Status: http.StatusNotFound, Message: "404 page not found"}
		},
		report: func(_ context.Context, rep v4.AgentReport) (v4.AgentReportResult, error) {
			reports++
			return v4.AgentReportResult{Unknown: []v4.TaskGroupRef{{Namespace: "ns", Name: "gone"}}}, nil
		},
	}
	two := []pendingStatus{{ns: "ns", name: "a"}, {ns: "ns", name: "gone"}}
	answers, err := b.send(context.Background(), two)
	if err != nil || len(answers) != 2 || answers[0].Code != http.StatusOK || answers[1].Code != http.StatusNotFound {
		t.Fatalf("two statuses to an older server: %+v, %v", answers, err)
	}
	if _, err := b.send(context.Background(), two[:1]); !errors.Is(err, errNoBatch) {
		t.Fatalf("one status to an older server: %v, want errNoBatch", err)
	}
	if asked != 1 || reports != 1 {
		t.Fatalf("the statuses route was asked %d times, reports %d", asked, reports)
	}
	// Any other error is the request's: the statuses go alone this once.
	b = &statusBatches{statuses: func(context.Context, v4.AgentStatuses) (v4.AgentStatusesResult, error) {
		return v4.AgentStatusesResult{}, &client.APIError{Status: http.StatusServiceUnavailable}
	}}
	if _, err := b.send(context.Background(), two); client.StatusOf(err) != http.StatusServiceUnavailable || b.oldUntil.Load() != 0 {
		t.Fatalf("a 503: %v", err)
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
