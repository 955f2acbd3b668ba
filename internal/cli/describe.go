package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newDescribeCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "describe KIND NAME",
		Short: "Show one object in detail, with its recent events",
		Example: "  berth describe process gamesvc -n ns-a\n" +
			"  berth describe taskgroup ns-a/0.gamesvc.ns-a.berth.1700000000\n" +
			"  berth describe secret db-creds   # keys and sizes, never values\n" +
			"  berth describe namespace team-a   # quotas, usage and limit defaults",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if webhookKind(args[0]) { // webhook.go
				return o.withClient(cmd, func(ctx context.Context, c *client.Client) error { return describeWebhook(ctx, o, c, args[1]) })
			}
			if isNamespaceArg(args[0]) { // not a kind: its quotas, usage and limit defaults (quota.go)
				return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
					q, err := c.NamespaceQuota(ctx, args[1])
					if err != nil {
						return err
					}
					return printQuota(o, q)
				})
			}
			kind, err := kindArg(args[0])
			if err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				return describe(ctx, o, c, kind, args[1])
			})
		},
	}
}

// describe prints the object with its task groups or endpoints, where it has them, and
// its events; what cannot be listed besides the object itself is only warned about.
func describe(ctx context.Context, o *options, c *client.Client, kind v4.Kind, name string) error {
	ns := o.namespace
	if n, rest, ok := strings.Cut(name, "/"); ok && kind.Namespaced() {
		ns, name = n, rest // NS/NAME: names never hold a slash
	}
	obj, err := c.Get(ctx, kind, ns, name)
	if err != nil {
		return err
	}
	m := obj.GetMeta()
	d := &describer{w: o.out(), now: o.env.now()}
	if kind == v4.KindNode {
		if d.nodeUse, err = nodeTaskGroups(ctx, o, c, m.Name); err != nil {
			fmt.Fprintf(o.env.stderr, "warning: cannot list the node's task groups: %v\n", err)
		}
		if d.nodeMeasure, err = measuredNodeUsage(ctx, c, m.Name); err != nil {
			fmt.Fprintf(o.env.stderr, "warning: cannot measure the node's usage: %v\n", err)
		}
	}
	events, err := c.Events(ctx, v4.EventFilter{Namespace: m.Namespace, Kind: kind, Name: m.Name})
	if err != nil {
		// The object itself was found: show it and say why events are missing.
		events = nil
		fmt.Fprintf(o.env.stderr, "warning: cannot list events: %v\n", err)
	}
	if wf, ok := obj.(*v4.Workflow); ok {
		d.wfNodes = describeNodes(ctx, o, c, wf)
	}
	d.object(obj)
	if kind == v4.KindApplication || kind == v4.KindProcess || kind == v4.KindDaemonset || kind == v4.KindDependency || kind == v4.KindJob {
		if tgs, err := ownedTaskGroups(ctx, c, kind, m); err == nil {
			d.taskGroups(tgs)
		} else {
			fmt.Fprintf(o.env.stderr, "warning: cannot list task groups: %v\n", err)
		}
	}
	if kind == v4.KindService {
		ep, err := c.Get(ctx, v4.KindEndpoint, m.Namespace, m.Name)
		switch {
		case err == nil:
			d.endpoints(ep.(*v4.Endpoints))
		case client.IsNotFound(err):
			d.endpoints(nil)
		default:
			fmt.Fprintf(o.env.stderr, "warning: cannot read the endpoints: %v\n", err)
		}
	}
	d.events(events)
	return d.err
}

// describer writes the human-readable view of one object. Keys are padded to one column;
// nested sections are indented by two spaces per level.
type describer struct {
	w     io.Writer
	now   time.Time
	level int
	err   error // the first write error; later writes are skipped
	// nodeUse is what a described node's task groups hold (nil: not known).
	nodeUse *nodeUse
	// nodeMeasure is what a described node uses, as its agent measures it (nil: not known).
	nodeMeasure *v4.NodeUsage
	// wfNodes are a described workflow's nodes (nil: not known).
	wfNodes []v4.WfNodeStatus
}

const keyWidth = 18

// kv writes "Key:   value" at the current level.
func (d *describer) kv(key, format string, args ...any) {
	pad := keyWidth - 2*d.level
	if pad < len(key)+2 {
		pad = len(key) + 2
	}
	d.line(fmt.Sprintf("%-*s%s", pad, key+":", fmt.Sprintf(format, args...)))
}

// line writes one indented line.
func (d *describer) line(s string) {
	if d.err != nil {
		return
	}
	_, d.err = fmt.Fprintf(d.w, "%s%s\n", strings.Repeat("  ", d.level), s)
}

// section writes "Title:" and runs body one level deeper.
func (d *describer) section(title string, body func()) {
	d.line(title + ":")
	d.level++
	body()
	d.level--
}

func (d *describer) object(obj v4.Object) {
	d.meta(obj.GetKind(), obj.GetMeta())
	switch o := obj.(type) {
	case *v4.Application:
		d.workload(&o.Workload)
	case *v4.Process:
		d.workload(&o.Workload)
	case *v4.Deployment:
		d.deployment(o)
	case *v4.Daemonset:
		d.daemonset(o)
	case *v4.Service:
		d.service(o)
	case *v4.ConfigMap:
		d.configMap(o)
	case *v4.Secret:
		d.secret(o)
	case *v4.Node:
		d.node(o)
	case *v4.Dependency:
		d.dependency(o)
	case *v4.Notify:
		d.notify(o)
	case *v4.CSIVolume:
		d.volume(o)
	case *v4.Job:
		d.job(o)
	case *v4.CronJob, *v4.CronWorkflow:
		d.cron(o)
	case *v4.Workflow:
		d.workflow(o)
	case *v4.Endpoints:
		d.endpoints(o)
	case *v4.TaskGroup:
		d.taskGroup(o)
	}
}

func (d *describer) meta(kind v4.Kind, m *v4.ObjectMeta) {
	d.kv("Name", "%s", m.Name)
	if kind.Namespaced() {
		d.kv("Namespace", "%s", m.Namespace)
	}
	d.kv("Kind", "%s", kind)
	d.labels("Labels", m.Labels)
	d.labels("Annotations", m.Annotations)
	if m.CreationTimestamp.IsZero() {
		d.kv("Created", "%s", none)
	} else {
		d.kv("Created", "%s (%s ago)", m.CreationTimestamp.Format(time.RFC3339), age(m.CreationTimestamp, d.now))
	}
	d.kv("Resource Version", "%s", orNone(m.ResourceVersion))
}

// labels writes one k=v per line, aligned under the first.
func (d *describer) labels(key string, m map[string]string) {
	if len(m) == 0 {
		d.kv(key, "%s", none)
		return
	}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 0 {
			d.kv(key, "%s=%s", k, m[k])
			continue
		}
		d.line(fmt.Sprintf("%-*s%s=%s", max(keyWidth-2*d.level, len(key)+2), "", k, m[k]))
	}
}

func (d *describer) workload(w *v4.Workload) {
	d.kv("Instances", "%d", w.Spec.Instance)
	d.stoppedInstances(w.Spec.StoppedInstances)
	d.priority(&w.Spec.Scheduling)
	if st := w.Status; st.Phase != "" {
		running := fmt.Sprintf("%d/%d running", st.Running, w.Spec.Instance)
		if st.Stopped > 0 {
			running += fmt.Sprintf(", %d stopped", st.Stopped)
		}
		d.kv("Status", "%s (%s)", st.Phase, running)
		if st.Message != "" {
			d.kv("Message", "%s", st.Message)
		}
		d.pending(st.Pending)
		d.backOff(st.BackOff)
		d.nominated("instance", st.Nominated)
	}
	d.policies(w.RestartPolicy, w.KillPolicy, w.Constraint)
	d.template(&w.Spec.Template)
}

// stoppedInstances lists the instances stopped on request (berth stop), if any.
func (d *describer) stoppedInstances(stopped []int) {
	if len(stopped) == 0 {
		return
	}
	idx := make([]string, len(stopped))
	for i, n := range stopped {
		idx[i] = strconv.Itoa(n)
	}
	d.kv("Stopped Instances", "%s (berth start KIND NAME INDEX runs one again)", strings.Join(idx, ", "))
}

func (d *describer) daemonset(ds *v4.Daemonset) {
	if st := ds.Status; st.Phase != "" {
		d.kv("Status", "%s (%d/%d nodes running)", st.Phase, st.Running, st.Desired)
		d.kv("Nodes", "%d desired, %d current, %d running, %d up to date", st.Desired, st.Current, st.Running, st.UpToDate)
		if st.Message != "" {
			d.kv("Message", "%s", st.Message)
		}
	}
	d.policies(ds.RestartPolicy, ds.KillPolicy, ds.Constraint)
	d.template(&ds.Spec.Template)
}

func (d *describer) deployment(dep *v4.Deployment) {
	d.kv("Instances", "%d", dep.Spec.Instance)
	d.stoppedInstances(dep.Spec.StoppedInstances)
	if len(dep.Spec.Selector) > 0 {
		d.kv("Selector", "%s", labelString(dep.Spec.Selector))
	}
	s := dep.Spec.Strategy
	d.kv("Strategy", "%s", orNone(s.Type))
	if r := s.RollingUpdate; r != nil {
		d.kv("Rolling Update", "maxUnavailable %d, maxSurge %d, upgradeDuration %ds, order %s, manual %t",
			r.MaxUnavailable, r.MaxSurge, r.UpgradeDuration, orNone(r.RollingOrder), r.RollingManually)
	}
	d.rolloutStatus(dep)
	d.policies(dep.RestartPolicy, dep.KillPolicy, dep.Constraint)
	if dep.Spec.Template != nil {
		d.template(dep.Spec.Template)
	}
}

// rolloutStatus shows where a deployment's rollout stands and its revisions.
func (d *describer) rolloutStatus(dep *v4.Deployment) {
	st := dep.Status
	if st.Phase == "" && st.Revision == 0 {
		return
	}
	phase := orNone(st.Phase)
	if st.Paused {
		phase += " (paused)"
	}
	d.kv("Status", "%s", phase)
	d.kv("Revision", "%d", st.Revision)
	d.kv("Rollout", "%d updated (%d available), %d old, %d of %d available", st.Current, st.CurrentAvailable, st.Old, st.Available, dep.Spec.Instance)
	if st.Message != "" {
		d.kv("Message", "%s", st.Message)
	}
	var revs []string
	for _, h := range st.History {
		revs = append(revs, fmt.Sprintf("%d (%s)", h.Revision, orNone(h.Cause)))
	}
	if len(revs) > 0 {
		d.kv("History", "%s", strings.Join(revs, ", "))
	}
}

func (d *describer) policies(rp *v4.RestartPolicy, kp *v4.KillPolicy, c *v4.Constraint) {
	if rp != nil {
		s := orNone(rp.Policy)
		s += fmt.Sprintf(" (interval %ds, backoff %ds", rp.Interval, rp.Backoff)
		if rp.MaxTimes > 0 {
			s += fmt.Sprintf(", at most %d times", rp.MaxTimes)
		} else {
			s += ", unlimited"
		}
		if rp.HostRetainTime > 0 {
			s += fmt.Sprintf(", keeps its host %ds", rp.HostRetainTime)
		}
		d.kv("Restart Policy", "%s)", s)
	} else {
		d.kv("Restart Policy", "%s", none)
	}
	if kp != nil {
		d.kv("Kill Policy", "grace period %ds", kp.GracePeriod)
	} else {
		d.kv("Kill Policy", "%s", none)
	}
	d.constraints(c)
}

// lastSeen is an event's age, with its repeats when it has some: "30s (x5 over 3m)", as
// kubectl describe writes them.
func lastSeen(e v4.Event, now time.Time) string {
	if e.Occurrences() < 2 || e.FirstTime.IsZero() {
		return age(e.Time, now)
	}
	return fmt.Sprintf("%s (x%d over %s)", age(e.Time, now), e.Count, age(e.FirstTime, now))
}

func (d *describer) events(events []v4.Event) {
	if len(events) == 0 {
		d.kv("Events", "%s", none)
		return
	}
	d.section("Events", func() {
		rows := make([][]string, 0, len(events))
		for _, e := range events {
			rows = append(rows, []string{lastSeen(e, d.now), e.Type, e.Reason, e.Message})
		}
		var b strings.Builder
		_ = writeTable(&b, []string{"LAST SEEN", "TYPE", "REASON", "MESSAGE"}, rows)
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			d.line(l)
		}
	})
}
