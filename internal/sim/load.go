package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// LoadConfig is a burst of submissions (docs/benchmarks.md, "Cluster benchmark"): Apps
// processes of Instances instances each, applied through the API. Each instance asks for
// 0.01 core and 8 MB, so that a simulated node (which reports its machine's resources)
// takes many.
type LoadConfig struct {
	Apps, Instances int
	// Namespaces spreads the processes over this many namespaces (1: one for all; 0:
	// one per process). Their names start with Prefix (default "bench") and the time.
	Namespaces int
	Prefix     string
	// Concurrency is how many applies are in flight (default 4).
	Concurrency int
	// Pace, when set, is the time between two applies' starts: a cluster at rest that
	// gets one process at a time rather than a burst.
	Pace time.Duration
	// Timeout bounds the wait for every instance to run (default 10 minutes).
	Timeout time.Duration
	// ProbeEvery is how often a GET of one process measures the API's latency during the
	// burst (default 50 ms).
	ProbeEvery time.Duration
	// RestartPolicy is the processes' restart policy ("": the default, OnFailure; Always
	// replaces the instances of a lost node, which NodeLoss measures).
	RestartPolicy string
	// Services adds a service of the same name selecting each process's instances (its
	// port 80 to their port 8080), applied with it.
	Services bool
}

// Load limits: the burst is bounded in count and in time.
const (
	MaxLoadInstances = 100_000
	maxProbes        = 100_000
)

// LoadResult is what a burst measured, all times from the first submission.
type LoadResult struct {
	Instances       int
	Placed, Running int
	Submitted       time.Duration // the last apply answered
	AllPlaced       time.Duration
	// LastCommitted is when the last task group was written, by the server's creation
	// timestamps (whole seconds): AllPlaced much later means the watch lagged behind.
	LastCommitted      time.Duration
	AllRunning         time.Duration
	PlacementsPerSec   float64
	RunningP50         time.Duration // submit -> Running, per instance
	RunningP99         time.Duration
	ApplyP99, GetP99   time.Duration
	Applies, Gets      int
	ApplyErrs, GetErrs int
	// WatchRestarts counts the tool's own watch ending during the burst (the server cuts
	// a watcher that falls behind); Relists those that started over from every task group.
	// Each makes the times above later than the server's.
	WatchRestarts, Relists int
	LastWatchEnd           string // why the last one ended
}

func (r *LoadResult) String() string {
	return fmt.Sprintf("instances %d: placed %d in %s (%.0f placements/s; the last written at about %s), running %d in %s; submitted in %s\n"+
		"submit -> Running: p50 %s, p99 %s\n"+
		"API during the burst: apply p99 %s (%d, %d failed), GET p99 %s (%d, %d failed)%s",
		r.Instances, r.Placed, r.AllPlaced.Round(time.Millisecond), r.PlacementsPerSec, r.LastCommitted.Round(time.Second), r.Running, r.AllRunning.Round(time.Millisecond),
		r.Submitted.Round(time.Millisecond), r.RunningP50.Round(time.Millisecond), r.RunningP99.Round(time.Millisecond),
		r.ApplyP99.Round(time.Millisecond), r.Applies, r.ApplyErrs, r.GetP99.Round(time.Millisecond), r.Gets, r.GetErrs, r.watchNote())
}

// watchNote says how often the tool's watch ended, when it did.
func (r *LoadResult) watchNote() string {
	if r.WatchRestarts == 0 {
		return ""
	}
	return fmt.Sprintf("\nthis tool's watch ended %d times (%d of them listing every task group again; the last: %s)",
		r.WatchRestarts, r.Relists, r.LastWatchEnd)
}

// Load submits the burst through c and follows its task groups with a watch until every
// instance runs or the timeout passes (then it returns what it measured, and an error).
func Load(ctx context.Context, c *client.Client, cfg LoadConfig) (*LoadResult, error) {
	switch {
	case cfg.Apps <= 0 || cfg.Instances <= 0 || cfg.Apps*cfg.Instances > MaxLoadInstances:
		return nil, fmt.Errorf("load: %d apps of %d instances: give at least one of each, at most %d instances in all", cfg.Apps, cfg.Instances, MaxLoadInstances)
	case cfg.Pace < 0:
		return nil, fmt.Errorf("load: pace %s is negative", cfg.Pace)
	case cfg.Namespaces < 0:
		return nil, fmt.Errorf("load: namespaces %d is negative", cfg.Namespaces)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "bench"
	}
	if !validPrefix(cfg.Prefix) {
		return nil, fmt.Errorf("load: prefix %q: give 1 to 20 lower-case letters and digits (the namespaces are PREFIX-TIME)", cfg.Prefix)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.ProbeEvery <= 0 {
		cfg.ProbeEvery = 50 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	run := fmt.Sprintf("%s-%d", cfg.Prefix, time.Now().Unix())
	nsOf := func(app int) string {
		switch cfg.Namespaces {
		case 0:
			return fmt.Sprintf("%s-%d", run, app)
		case 1:
			return run
		}
		return fmt.Sprintf("%s-%d", run, app%cfg.Namespaces)
	}
	events, err := c.Watch(ctx, v4.KindTaskGroup, "", "")
	if err != nil {
		return nil, fmt.Errorf("load: watch task groups: %w", err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	b := &burst{total: cfg.Apps * cfg.Instances, restartPolicy: cfg.RestartPolicy, services: cfg.Services, submitted: map[string]time.Time{},
		placed: map[string]bool{}, running: map[string]bool{}, done: make(chan struct{})}
	var wg sync.WaitGroup
	defer wg.Wait()
	watchEnded := make(chan struct{})
	wg.Go(func() { defer close(watchEnded); b.followAll(watchCtx, c, events, run) })
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	wg.Go(func() { b.probe(probeCtx, c, nsOf(0), cfg.ProbeEvery) })

	b.start = time.Now()
	sem := make(chan struct{}, cfg.Concurrency)
	var applies sync.WaitGroup
	var pace <-chan time.Time
	if cfg.Pace > 0 {
		t := time.NewTicker(cfg.Pace)
		defer t.Stop()
		pace = t.C
	}
	for app := range cfg.Apps {
		if pace != nil && app > 0 {
			select {
			case <-pace:
			case <-ctx.Done():
			}
		}
		sem <- struct{}{}
		applies.Go(func() {
			defer func() { <-sem }()
			b.apply(ctx, c, nsOf(app), fmt.Sprintf("app-%d", app), cfg.Instances)
		})
	}
	applies.Wait()
	b.mu.Lock()
	b.res.Submitted = time.Since(b.start)
	b.mu.Unlock()
	ended := ""
	select {
	case <-b.done:
	case <-ctx.Done():
		ended = fmt.Sprintf("after %s", cfg.Timeout)
	case <-watchEnded:
		ended = "when the task group watch ended (the server went away?)"
	}
	stopProbe()
	stopWatch()
	cancel()
	wg.Wait()
	res := b.result()
	if res.Running < res.Instances {
		return res, fmt.Errorf("load: %d of %d instances running %s", res.Running, res.Instances, ended)
	}
	return res, nil
}

// burst is the state of one Load.
type burst struct {
	total         int
	restartPolicy string
	services      bool
	start         time.Time
	done          chan struct{}

	mu        sync.Mutex
	submitted map[string]time.Time // "ns/app" -> when its apply was sent
	placed    map[string]bool
	running   map[string]bool
	toRunning []time.Duration
	applyLat  []time.Duration
	getLat    []time.Duration
	res       LoadResult
}

func (b *burst) apply(ctx context.Context, c *client.Client, ns, name string, instances int) {
	policy := ""
	if b.restartPolicy != "" {
		policy = fmt.Sprintf(`"restartPolicy":{"policy":%q},`, b.restartPolicy)
	}
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q}},%s`+
		`"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"bench","startCmd":"./bench",`+
		`"resources":{"requests":{"cpu":"0.01","memory":"8"},"limits":{"cpu":"0.01","memory":"8"}}}]}}}}`,
		name, ns, name, policy, instances)
	if b.services {
		doc += fmt.Sprintf("\n"+`{"apiVersion":"v4","kind":"service","metadata":{"name":%q,"namespace":%q},`+
			`"spec":{"selector":{"app":%q},"ports":[{"name":"http","protocol":"tcp","servicePort":80,"targetPort":8080}]}}`, name, ns, name)
	}
	b.mu.Lock()
	b.submitted[ns+"/"+name] = time.Now()
	b.mu.Unlock()
	t0 := time.Now()
	_, err := c.Apply(ctx, []byte(doc))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.applyLat = append(b.applyLat, time.Since(t0))
	b.res.Applies++
	if err != nil {
		b.res.ApplyErrs++
	}
}

// followAll follows the task groups from events, and watches again when that watch ends
// (the server cuts a watcher that falls behind, as this one may on a busy machine): from
// the last revision seen, or from the start (every task group again) when that one is
// gone. It returns when ctx ends.
func (b *burst) followAll(ctx context.Context, c *client.Client, events <-chan client.WatchEvent, run string) {
	resumed := ""
	for {
		rv := b.follow(events, run)
		if ctx.Err() != nil {
			return
		}
		// A watch resumed from a revision that ends again there made no progress: the
		// changes since are more than the server lets wait for one watcher. List again.
		if rv != "" && rv == resumed {
			rv = ""
		}
		resumed = rv
		b.mu.Lock()
		b.res.WatchRestarts++
		if rv == "" {
			b.res.Relists++
		}
		b.mu.Unlock()
		var err error
		if events, err = c.Watch(ctx, v4.KindTaskGroup, "", rv); err != nil {
			b.mu.Lock()
			b.res.Relists++
			b.mu.Unlock()
			if events, err = c.Watch(ctx, v4.KindTaskGroup, "", ""); err != nil {
				if ctx.Err() != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
				events = closedWatch()
			}
		}
	}
}

// closedWatch is a watch that has ended (followAll then watches again).
func closedWatch() <-chan client.WatchEvent {
	ch := make(chan client.WatchEvent)
	close(ch)
	return ch
}

// follow records when each task group of the run is first seen (placed) and first seen
// Running, until the watch ends, and returns the last revision it saw ("" when it ended
// with an error that makes that revision useless).
func (b *burst) follow(events <-chan client.WatchEvent, run string) string {
	rv := ""
	for ev := range events {
		if ev.Err != nil {
			b.mu.Lock()
			b.res.LastWatchEnd = ev.Err.Error()
			b.mu.Unlock()
			if client.StatusOf(ev.Err) == http.StatusGone {
				rv = client.ResumeVersion(ev.Err) // fell behind: resume; compacted: list again
			}
			continue
		}
		if ev.Object != nil {
			rv = ev.Object.GetMeta().ResourceVersion
		}
		tg, ok := ev.Object.(*v4.TaskGroup)
		if !ok || !strings.HasPrefix(tg.Metadata.Namespace, run) || ev.Type == "DELETED" {
			continue
		}
		now := time.Now()
		b.mu.Lock()
		name := tg.Metadata.Namespace + "/" + tg.Metadata.Name
		if !b.placed[name] {
			b.placed[name] = true
			// Creation timestamps are whole seconds: the write came within the second
			// after; the start is on this machine's clock, as the server's is.
			if at := tg.Metadata.CreationTimestamp.Add(time.Second).Sub(b.start); at > b.res.LastCommitted {
				b.res.LastCommitted = at
			}
			if len(b.placed) == b.total {
				b.res.AllPlaced = now.Sub(b.start)
			}
		}
		if tg.Status.Phase == v4.StatusRunning && !b.running[name] {
			b.running[name] = true
			if sent, ok := b.submitted[tg.Metadata.Namespace+"/"+tg.Spec.Owner.Name]; ok {
				b.toRunning = append(b.toRunning, now.Sub(sent))
			}
			if len(b.running) == b.total {
				b.res.AllRunning = now.Sub(b.start)
				close(b.done)
			}
		}
		b.mu.Unlock()
	}
	return rv
}

// probe GETs one process now and then, measuring the API's read latency under the burst.
func (b *burst) probe(ctx context.Context, c *client.Client, ns string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 0; n < maxProbes; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t0 := time.Now()
		_, err := c.Get(ctx, v4.KindProcess, ns, "app-0")
		if ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		b.getLat = append(b.getLat, time.Since(t0))
		b.res.Gets++
		var apiErr *client.APIError
		if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == 404) { // not applied yet
			b.res.GetErrs++
		}
		b.mu.Unlock()
	}
}

func (b *burst) result() *LoadResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.res
	r.Instances, r.Placed, r.Running = b.total, len(b.placed), len(b.running)
	if r.AllPlaced > 0 {
		r.PlacementsPerSec = float64(b.total) / r.AllPlaced.Seconds()
	}
	r.RunningP50, r.RunningP99 = quantile(b.toRunning, 0.50), quantile(b.toRunning, 0.99)
	r.ApplyP99, r.GetP99 = quantile(b.applyLat, 0.99), quantile(b.getLat, 0.99)
	return &r
}

// quantile is the q-quantile of ds (nearest rank); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// validPrefix reports whether p can start namespace names and be read back from them
// (the service catalog's latencies are kept by prefix): lower-case letters and digits, no dash.
func validPrefix(p string) bool {
	if p == "" || len(p) > 20 {
		return false
	}
	for _, r := range p {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
