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

// LoadResult is what a burst measured, all times from the first submission.
type LoadResult struct {
	Instances       int
	Placed, Running int
	Submitted       time.Duration // the last apply answered
	AllPlaced       time.Duration
	// LastCommitted is when the last task group was written, by the server's creation
	// timestamps (whole seconds): AllPlaced much later means the watch lagged behind.
	LastCommitted time.Duration
	// PlacedBySecond is how many were placed by the end of each second of the burst:
	// the scheduler's pace while the applies come and after.
	PlacedBySecond   []int
	AllRunning       time.Duration
	PlacementsPerSec float64
	RunningP50       time.Duration // submit -> Running, per instance
	RunningP99       time.Duration
	ApplyP99, GetP99 time.Duration
	// ServerApplyP99 and ServerGetP99 are the same percentiles as the server measured
	// them (load_server.go): the upper bound of their bucket, or with ...Over the largest
	// bound, which they are past; 0 when unknown.
	ServerApplyP99, ServerGetP99   time.Duration
	ServerApplyOver, ServerGetOver bool
	// LocalReads and ReadsAskedAgain are the reads the server's sole etcd member served
	// from its applied state during the burst and those of them asked again through raft
	// (docs/store.md, "Reads"); KnownReads says whether the server counted them.
	LocalReads, ReadsAskedAgain uint64
	KnownReads                  bool
	Applies, Gets               int
	ApplyErrs, GetErrs          int
	// WatchRestarts counts the tool's own watch ending during the burst (the server cuts
	// a watcher that falls behind); Relists those that started over from every task group.
	// Each makes the times above later than the server's.
	WatchRestarts, Relists int
	LastWatchEnd           string // why the last one ended
	// LostNodes are the nodes the server marked Lost during the burst (none may be);
	// Instances is what the server reported of the burst's task groups once every
	// instance ran (each exactly once, Running), nil when it could not be read.
	LostNodes []string
	Check     *InstanceCheck
}

func (r *LoadResult) String() string {
	return fmt.Sprintf("instances %d: placed %d in %s (%.0f placements/s; the last written at about %s), running %d in %s; submitted in %s\n"+
		"placed by each second: %v\n"+
		"submit -> Running: p50 %s, p99 %s\n"+
		"API during the burst: apply p99 %s (%d, %d failed), GET p99 %s (%d, %d failed)%s%s",
		r.Instances, r.Placed, r.AllPlaced.Round(time.Millisecond), r.PlacementsPerSec, r.LastCommitted.Round(time.Second), r.Running, r.AllRunning.Round(time.Millisecond),
		r.Submitted.Round(time.Millisecond), r.PlacedBySecond, r.RunningP50.Round(time.Millisecond), r.RunningP99.Round(time.Millisecond),
		r.ApplyP99.Round(time.Millisecond), r.Applies, r.ApplyErrs, r.GetP99.Round(time.Millisecond), r.Gets, r.GetErrs, r.serverNote(), r.watchNote()) + r.checkNote()
}

// Load submits the burst through c and follows its task groups with a watch until every
// instance runs or the timeout passes (then it returns what it measured, and an error).
func Load(ctx context.Context, c *client.Client, cfg LoadConfig) (*LoadResult, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	run := fmt.Sprintf("%s-%d", cfg.Prefix, time.Now().Unix())
	if cfg.Run != "" {
		run = cfg.Run
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
	wg.Go(func() { b.probe(probeCtx, c, cfg.namespace(run, 0), cfg.ProbeEvery) })
	lost, nodeEvents, nodeRV, err := watchLost(watchCtx, c)
	if err != nil {
		stopProbe()
		stopWatch() // the deferred wg.Wait comes first
		return nil, fmt.Errorf("load: %w", err)
	}
	wg.Go(func() { lost.follow(watchCtx, c, nodeEvents, nodeRV) })

	before := readServer(ctx, c, applyRoute, getRoute)
	b.submitAll(ctx, c, &cfg, run)
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
	if before != nil {
		res.serverSince(before, readServer(context.WithoutCancel(ctx), c, applyRoute, getRoute))
	}
	if res.Running < res.Instances {
		return res, fmt.Errorf("load: %d of %d instances running %s", res.Running, res.Instances, ended)
	}
	return res, checkBurst(ctx, c, &cfg, run, res, lost)
}

// submitAll applies every process of the run, Concurrency at a time and at the configured
// pace, and records how long the submissions took.
func (b *burst) submitAll(ctx context.Context, c *client.Client, cfg *LoadConfig, run string) {
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
			b.apply(ctx, c, cfg.namespace(run, app), fmt.Sprintf("app-%d", app), cfg.Instances)
		})
	}
	applies.Wait()
	b.mu.Lock()
	b.res.Submitted = time.Since(b.start)
	b.mu.Unlock()
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
			sec := int(now.Sub(b.start) / time.Second)
			for len(b.res.PlacedBySecond) <= sec {
				b.res.PlacedBySecond = append(b.res.PlacedBySecond, len(b.placed)-1)
			}
			b.res.PlacedBySecond[sec] = len(b.placed)
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
