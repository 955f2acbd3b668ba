package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// CheckConfig is the cluster benchmark's check of a cluster at rest (Check).
type CheckConfig struct {
	// Prefixes are those of the namespaces whose processes are checked (default the
	// burst's, "bench", and the phase at rest's, "rest": LoadConfig.Prefix).
	Prefixes []string
	// Stats reads the simulators' own counts (ReadStats of their stats files).
	Stats func() (Stats, error)
	// Settle is how long the simulators' count of running task groups may take to
	// agree with the server's (default 30 s: the last reports on their way).
	Settle time.Duration
}

// CheckResult is what Check found.
type CheckResult struct {
	Instances *InstanceCheck
	// ServerRunning counts the task groups the server has Running, SimRunning those the
	// simulators run, both leaving out the frozen nodes.
	ServerRunning, SimRunning int
	// Compared is false when the simulators run whole agents, which do not count their
	// task groups: SimRunning is then not compared.
	Compared          bool
	Frozen, LostNodes []string
}

func (r *CheckResult) String() string {
	sims := fmt.Sprint(r.SimRunning)
	if !r.Compared {
		sims = "not counted (whole agents)"
	}
	s := fmt.Sprintf("the server's task groups: %s\nRunning task groups: the server %d, the simulators %s",
		r.Instances, r.ServerRunning, sims)
	if len(r.Frozen) > 0 {
		s += fmt.Sprintf(" (frozen nodes left out: %s)", namesList(r.Frozen))
	}
	if len(r.LostNodes) > 0 {
		s += fmt.Sprintf("\nnodes Lost that were not frozen: %d (%s)", len(r.LostNodes), namesList(r.LostNodes))
	}
	return s
}

// Fields are the figures of r as key=value pairs on one line (LoadResult.Fields).
func (r *CheckResult) Fields() string {
	return fmt.Sprintf("instances=%d instances_running=%d missing=%d duplicated=%d not_running=%d server_running=%d sim_running=%d lost_nodes=%d",
		r.Instances.Expected, r.Instances.Running, r.Instances.Missing, r.Instances.Duplicated, r.Instances.NotRunning,
		r.ServerRunning, r.SimRunning, len(r.LostNodes))
}

// Check asserts what a benchmark run must leave, as the server reports it: every
// instance of the processes of the benchmark's namespaces exactly once and Running; as
// many task groups Running as the simulators run (a status report lost on the way shows
// as a difference that stays); no node Lost but those frozen on purpose. It returns an
// error naming each that fails.
func Check(ctx context.Context, c *client.Client, cfg CheckConfig) (*CheckResult, error) {
	if cfg.Stats == nil {
		return nil, errors.New("check: no simulator stats to compare with")
	}
	if len(cfg.Prefixes) == 0 {
		cfg.Prefixes = []string{"bench", "rest"}
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 30 * time.Second
	}
	res := &CheckResult{}
	var tgs []*v4.TaskGroup
	var frozen map[string]bool
	for deadline := time.Now().Add(cfg.Settle); ; {
		st, err := cfg.Stats()
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		frozen = map[string]bool{}
		res.Frozen = res.Frozen[:0]
		for _, f := range st.Frozen {
			frozen[f.Node] = true
			res.Frozen = append(res.Frozen, f.Node)
		}
		if tgs, err = listTaskGroups(ctx, c); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		res.ServerRunning, res.SimRunning, res.Compared = serverRunning(tgs, frozen), st.Running, st.Light
		if !res.Compared || res.ServerRunning == res.SimRunning || time.Now().After(deadline) {
			break
		}
		if !sleep(ctx, time.Second) {
			return nil, ctx.Err()
		}
	}
	want, err := benchProcesses(ctx, c, cfg.Prefixes)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	res.Instances = checkInstances(tgs, want, frozen)
	nodes, err := c.List(ctx, v4.KindNode, "")
	if err != nil {
		return nil, fmt.Errorf("check: list nodes: %w", err)
	}
	ns := make([]*v4.Node, 0, len(nodes.Items))
	for _, o := range nodes.Items {
		if n, ok := o.(*v4.Node); ok {
			ns = append(ns, n)
		}
	}
	res.LostNodes = lostOthers(ns, frozen)

	var problems []error
	if !res.Instances.OK() {
		problems = append(problems, fmt.Errorf("the server's task groups: %s", res.Instances))
	}
	if res.Compared && res.ServerRunning != res.SimRunning {
		problems = append(problems, fmt.Errorf("the server has %d task groups Running, the simulators run %d, after %s: status reports lost",
			res.ServerRunning, res.SimRunning, cfg.Settle))
	}
	if len(res.LostNodes) > 0 {
		problems = append(problems, fmt.Errorf("%d nodes Lost that were not frozen: %s", len(res.LostNodes), namesList(res.LostNodes)))
	}
	if len(problems) > 0 {
		return res, fmt.Errorf("check: %w", errors.Join(problems...))
	}
	return res, nil
}

func listTaskGroups(ctx context.Context, c *client.Client) ([]*v4.TaskGroup, error) {
	list, err := c.List(ctx, v4.KindTaskGroup, "")
	if err != nil {
		return nil, fmt.Errorf("list task groups: %w", err)
	}
	tgs := make([]*v4.TaskGroup, 0, len(list.Items))
	for _, o := range list.Items {
		if tg, ok := o.(*v4.TaskGroup); ok {
			tgs = append(tgs, tg)
		}
	}
	return tgs, nil
}

// benchProcesses are the processes of the namespaces named PREFIX-... for a prefix of
// prefixes, and the instances each asks for.
func benchProcesses(ctx context.Context, c *client.Client, prefixes []string) (map[ownerKey]int, error) {
	list, err := c.List(ctx, v4.KindProcess, "")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	want := map[ownerKey]int{}
	for _, o := range list.Items {
		p, ok := o.(*v4.Process)
		if !ok {
			continue
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(p.Metadata.Namespace, pre+"-") {
				want[ownerKey{p.Metadata.Namespace, p.Metadata.Name}] = p.Spec.Instance
				break
			}
		}
	}
	return want, nil
}
