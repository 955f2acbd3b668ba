package sim

import (
	"fmt"
	"time"
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
	// Run, when set, names the run in place of PREFIX-TIME (its namespaces are RUN or
	// RUN-N): a caller that configures the namespaces before the burst (quotas, say)
	// knows their names. Lower-case letters and digits, as Prefix.
	Run string
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

// setDefaults checks the configuration and fills what was left out.
func (cfg *LoadConfig) setDefaults() error {
	switch {
	case cfg.Apps <= 0 || cfg.Instances <= 0 || cfg.Apps*cfg.Instances > MaxLoadInstances:
		return fmt.Errorf("load: %d apps of %d instances: give at least one of each, at most %d instances in all", cfg.Apps, cfg.Instances, MaxLoadInstances)
	case cfg.Pace < 0:
		return fmt.Errorf("load: pace %s is negative", cfg.Pace)
	case cfg.Namespaces < 0:
		return fmt.Errorf("load: namespaces %d is negative", cfg.Namespaces)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "bench"
	}
	if !validPrefix(cfg.Prefix) {
		return fmt.Errorf("load: prefix %q: give 1 to 20 lower-case letters and digits (the namespaces are PREFIX-TIME)", cfg.Prefix)
	}
	if cfg.Run != "" && !validPrefix(cfg.Run) {
		return fmt.Errorf("load: run %q: give 1 to 20 lower-case letters and digits", cfg.Run)
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
	return nil
}

// namespace is where app number app of the run goes.
func (cfg *LoadConfig) namespace(run string, app int) string {
	switch cfg.Namespaces {
	case 0:
		return fmt.Sprintf("%s-%d", run, app)
	case 1:
		return run
	}
	return fmt.Sprintf("%s-%d", run, app%cfg.Namespaces)
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
