package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/client"
)

// What a burst reports besides its times: what the server holds once it ran, and its
// figures on one line.

// checkNote says what the server reported of the burst's task groups and nodes.
func (r *LoadResult) checkNote() string {
	s := ""
	if r.Check != nil {
		s += "\nthe server's task groups: " + r.Check.String()
	}
	if len(r.LostNodes) > 0 {
		s += fmt.Sprintf("\nnodes marked Lost during the burst: %d (%s)", len(r.LostNodes), namesList(r.LostNodes))
	}
	return s
}

// Fields are the figures of r as key=value pairs on one line (the cluster benchmark's
// RESULT lines, which scripts/bench-compare.sh reads).
func (r *LoadResult) Fields() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("instances=%d placed=%d running=%d placements_per_s=%.0f all_placed_s=%.2f all_running_s=%.2f running_p50_ms=%s running_p99_ms=%s apply_p99_ms=%s get_p99_ms=%s apply_errors=%d get_errors=%d lost_nodes=%d",
		r.Instances, r.Placed, r.Running, r.PlacementsPerSec, r.AllPlaced.Seconds(), r.AllRunning.Seconds(), ms(r.RunningP50), ms(r.RunningP99),
		ms(r.ApplyP99), ms(r.GetP99), r.ApplyErrs, r.GetErrs, len(r.LostNodes)) + r.serverFields(ms)
}

// serverFields are the server's own percentiles, when known, as more key=value pairs.
func (r *LoadResult) serverFields(ms func(time.Duration) string) string {
	s := ""
	if r.ServerApplyP99 > 0 {
		s += " apply_server_p99_ms=" + ms(r.ServerApplyP99)
	}
	if r.ServerGetP99 > 0 {
		s += " get_server_p99_ms=" + ms(r.ServerGetP99)
	}
	if r.KnownReads {
		s += fmt.Sprintf(" local_reads=%d local_reads_asked_again=%d", r.LocalReads, r.ReadsAskedAgain)
	}
	return s
}

// serverNote says what the server measured of the same requests, when known.
func (r *LoadResult) serverNote() string {
	if r.ServerApplyP99 == 0 && r.ServerGetP99 == 0 {
		return ""
	}
	bound := func(d time.Duration, over bool) string {
		switch {
		case d == 0:
			return "unknown"
		case over:
			return "> " + d.String()
		default:
			return "<= " + d.String()
		}
	}
	s := fmt.Sprintf("; as the server measured them (its histogram's bucket): apply p99 %s, GET p99 %s",
		bound(r.ServerApplyP99, r.ServerApplyOver), bound(r.ServerGetP99, r.ServerGetOver))
	if r.KnownReads {
		s += fmt.Sprintf("; its etcd member served %d reads from its applied state, %d of them asked again through raft", r.LocalReads, r.ReadsAskedAgain)
	}
	return s
}

// watchNote says how often the tool's watch ended, when it did.
func (r *LoadResult) watchNote() string {
	if r.WatchRestarts == 0 {
		return ""
	}
	return fmt.Sprintf("\nthis tool's watch ended %d times (%d of them listing every task group again; the last: %s)",
		r.WatchRestarts, r.Relists, r.LastWatchEnd)
}

// checkBurst asserts what a burst that ran must leave (docs/benchmarks.md, "Cluster
// benchmark"): every instance of every process exactly once and Running as the server
// reports it, and no node marked Lost meanwhile. It puts what it found in res.
func checkBurst(ctx context.Context, c *client.Client, cfg *LoadConfig, run string, res *LoadResult, lost *lostWatch) error {
	var problems []error
	names, err := lost.result()
	res.LostNodes = names
	if err != nil {
		problems = append(problems, err)
	}
	if len(names) > 0 {
		problems = append(problems, fmt.Errorf("%d nodes marked Lost during the burst: %s", len(names), namesList(names)))
	}
	// The watch may have ended with ctx: the list has a context of its own.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	all, err := listTaskGroups(lctx, c)
	if err != nil {
		problems = append(problems, err)
		return fmt.Errorf("load: %w", errors.Join(problems...))
	}
	want := map[ownerKey]int{}
	for app := range cfg.Apps {
		want[ownerKey{cfg.namespace(run, app), fmt.Sprintf("app-%d", app)}] = cfg.Instances
	}
	tgs := all[:0]
	for _, tg := range all {
		if strings.HasPrefix(tg.Metadata.Namespace, run) {
			tgs = append(tgs, tg)
		}
	}
	res.Check = checkInstances(tgs, want, nil)
	if !res.Check.OK() {
		problems = append(problems, fmt.Errorf("the server's task groups: %s", res.Check))
	}
	if len(problems) > 0 {
		return fmt.Errorf("load: %w", errors.Join(problems...))
	}
	return nil
}
