package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// none fills an empty cell, as kubectl does.
const none = "<none>"

// kindColumns are the kind-specific columns of `berth get`, between NAME and AGE.
type kindColumns struct {
	headers []string
	values  func(v4.Object) []string
}

func columnsFor(kind v4.Kind, now time.Time) kindColumns {
	switch kind {
	case v4.KindApplication, v4.KindProcess:
		return workloadColumns(kind)
	case v4.KindDeployment:
		return deploymentColumns()
	case v4.KindDaemonset:
		return daemonsetColumns()
	case v4.KindService:
		return serviceColumns()
	case v4.KindEndpoint:
		return endpointColumns()
	case v4.KindConfigMap, v4.KindSecret:
		return kindColumns{[]string{"DATA"}, func(o v4.Object) []string { return []string{dataCount(o)} }}
	case v4.KindNode:
		return nodeColumns()
	case v4.KindTaskGroup:
		return taskGroupColumns()
	case v4.KindDependency:
		return dependencyColumns()
	case v4.KindNotify:
		return notifyColumns()
	case v4.KindVolume:
		return volumeColumns()
	case v4.KindWorkflow:
		return workflowColumns(now)
	case v4.KindWorkflowTemplate:
		return workflowTemplateColumns()
	case v4.KindJob:
		return jobColumns(now)
	case v4.KindCronJob, v4.KindCronWorkflow:
		return cronColumns(now)
	case v4.KindArtifactRepository:
		return artifactRepositoryColumns()
	}
	return kindColumns{values: func(v4.Object) []string { return nil }}
}

func workloadColumns(kind v4.Kind) kindColumns {
	h := "IMAGES"
	if kind == v4.KindProcess {
		h = "PROCESSES"
	}
	return kindColumns{[]string{"STATUS", "RUNNING", h}, func(o v4.Object) []string {
		w := workloadOf(o)
		if w == nil {
			return []string{"", "", ""}
		}
		running := fmt.Sprintf("%d/%d", w.Status.Running, w.Spec.Instance)
		if n := w.Status.Stopped; n > 0 { // stopped on request: counted, not running
			running += fmt.Sprintf(" (%d stopped)", n)
		}
		phase := orNone(w.Status.Phase)
		if p := w.Status.Pending; p != nil { // why instances wait, as a deployment says ",paused"
			phase += "," + p.Reason
		}
		return []string{phase, running, taskSummary(&w.Spec.Template.Spec)}
	}}
}

func deploymentColumns() kindColumns {
	return kindColumns{[]string{"STATUS", "REVISION", "UPDATED", "AVAILABLE", "STRATEGY"}, func(o v4.Object) []string {
		d, _ := o.(*v4.Deployment)
		if d == nil {
			return []string{"", "", "", "", ""}
		}
		st, n := d.Status, d.Spec.Instance
		rev := none
		if st.Revision > 0 {
			rev = strconv.Itoa(st.Revision)
		}
		phase := orNone(st.Phase)
		if st.Paused {
			phase += ",paused"
		}
		return []string{phase, rev, fmt.Sprintf("%d/%d", st.CurrentAvailable, n), fmt.Sprintf("%d/%d", st.Available, n), orNone(d.Spec.Strategy.Type)}
	}}
}

func daemonsetColumns() kindColumns {
	return kindColumns{[]string{"STATUS", "DESIRED", "RUNNING", "UP-TO-DATE", "TASKS"}, func(o v4.Object) []string {
		d, _ := o.(*v4.Daemonset)
		if d == nil {
			return []string{"", "", "", "", ""}
		}
		st := d.Status
		return []string{orNone(st.Phase), strconv.Itoa(st.Desired), strconv.Itoa(st.Running), strconv.Itoa(st.UpToDate),
			taskSummary(&d.Spec.Template.Spec)}
	}}
}

func serviceColumns() kindColumns {
	return kindColumns{[]string{"SELECTOR", "PORTS"}, func(o v4.Object) []string {
		s, _ := o.(*v4.Service)
		if s == nil {
			return []string{"", ""}
		}
		return []string{labelString(s.Spec.Selector), servicePorts(s.Spec.Ports)}
	}}
}

func endpointColumns() kindColumns {
	return kindColumns{[]string{"VIP", "READY", "NOT READY", "ENDPOINTS"}, func(o v4.Object) []string {
		e, _ := o.(*v4.Endpoints)
		if e == nil {
			return []string{"", "", "", ""}
		}
		return []string{orNone(e.VIP), strconv.Itoa(len(e.Endpoints)), strconv.Itoa(len(e.NotReady)), endpointAddresses(e, 3)}
	}}
}

// dataCount is how many entries a config map or a secret holds ("" for any other object).
func dataCount(o v4.Object) string {
	switch d := o.(type) {
	case *v4.ConfigMap:
		return strconv.Itoa(len(d.Datas))
	case *v4.Secret:
		return strconv.Itoa(len(d.Datas))
	}
	return ""
}

// workloadOf returns the shared shape of applications and processes.
func workloadOf(o v4.Object) *v4.Workload {
	switch w := o.(type) {
	case *v4.Application:
		return &w.Workload
	case *v4.Process:
		return &w.Workload
	}
	return nil
}

// taskSummary lists a pod's images or process names.
func taskSummary(p *v4.PodSpec) string {
	var names []string
	for _, c := range p.Containers {
		names = append(names, c.Image)
	}
	for _, t := range p.Processes {
		names = append(names, t.ProcName)
	}
	return orNone(strings.Join(names, ","))
}

// labelString renders labels as sorted k=v pairs.
func labelString(m map[string]string) string {
	return joinOrNone(slices.Sorted(maps.Keys(m)), ",", func(k string) string { return k + "=" + m[k] })
}

// servicePorts renders ports as name:port/protocol.
func servicePorts(ports []v4.ServicePort) string {
	return joinOrNone(ports, ",", func(p v4.ServicePort) string {
		s := namedPort(p.Name, p.ServicePort)
		if p.Protocol != "" {
			s += "/" + p.Protocol
		}
		return s
	})
}

// namedPort renders a port as name:port, or its number alone when it has no name.
func namedPort(name string, port int) string {
	if name == "" {
		return strconv.Itoa(port)
	}
	return name + ":" + strconv.Itoa(port)
}

// joinOrNone renders each item and joins them with sep, or is <none> without items:
// the list cells of tables and descriptions.
func joinOrNone[T any](items []T, sep string, render func(T) string) string {
	parts := make([]string, 0, len(items))
	for _, item := range items {
		parts = append(parts, render(item))
	}
	return orNone(strings.Join(parts, sep))
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// objectTable renders objects of one kind as aligned rows.
type objectTable struct {
	kind  v4.Kind
	allNS bool // adds NAMESPACE
	watch bool // adds EVENT
	now   time.Time
}

func (t objectTable) header() []string {
	var h []string
	if t.watch {
		h = append(h, "EVENT")
	}
	if t.allNS {
		h = append(h, "NAMESPACE")
	}
	h = append(h, "NAME")
	h = append(h, columnsFor(t.kind, t.now).headers...)
	return append(h, "AGE")
}

func (t objectTable) row(event string, o v4.Object) []string {
	m := o.GetMeta()
	var r []string
	if t.watch {
		r = append(r, event)
	}
	if t.allNS {
		r = append(r, m.Namespace)
	}
	r = append(r, m.Name)
	r = append(r, columnsFor(t.kind, t.now).values(o)...)
	return append(r, age(m.CreationTimestamp, t.now))
}

// writeTable aligns rows under header with text/tabwriter (three spaces between columns).
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := newTabWriter(w)
	if header != nil {
		writeRow(tw, header)
	}
	for _, r := range rows {
		writeRow(tw, r)
	}
	return tw.Flush()
}

func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
}

// writeRow writes one row; tabs and newlines inside a cell would break the alignment,
// so they become spaces.
func writeRow(w io.Writer, cells []string) {
	clean := make([]string, len(cells))
	for i, c := range cells {
		clean[i] = cellReplacer.Replace(c)
	}
	fmt.Fprintln(w, strings.Join(clean, "\t"))
}

var cellReplacer = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ")

// taskGroupColumns: which instance of what, where, and how it is.
func taskGroupColumns() kindColumns {
	return kindColumns{[]string{"OWNER", "INDEX", "NODE", "STATUS", "HEALTHY", "RESTARTS", "TIER"}, func(o v4.Object) []string {
		tg, _ := o.(*v4.TaskGroup)
		if tg == nil {
			return []string{"", "", "", "", "", "", ""}
		}
		tier := none
		if tg.Spec.Revocable {
			tier = v4.TierRevocable
		}
		healthy := none
		if h := tg.Status.Healthy; h != nil {
			healthy = strconv.FormatBool(*h)
		}
		return []string{
			string(tg.Spec.Owner.Kind) + "/" + tg.Spec.Owner.Name, strconv.Itoa(tg.Spec.Index), orNone(tg.Spec.Node),
			taskGroupPhase(tg), healthy, strconv.Itoa(tg.Spec.ReschedTimes), tier,
		}
	}}
}

// taskGroupPhase is a task group's phase, and whether it was asked to stop: ",stopping"
// while it runs, ",stopped" once it ended (an instance stopped on request stays so).
func taskGroupPhase(tg *v4.TaskGroup) string {
	phase := orNone(tg.Status.Phase)
	switch {
	case tg.Spec.Desired != v4.DesiredStopped:
	case v4.Terminal(tg.Status.Phase) || tg.Status.Phase == v4.StatusLost:
		phase += ",stopped"
	default:
		phase += ",stopping"
	}
	return phase
}

// priorityClassHeader are the columns of `berth get priorityclasses`.
var priorityClassHeader = []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "PREEMPTION-POLICY", "DESCRIPTION"}

func priorityClassRow(pc *v4.PriorityClass) []string {
	policy := pc.PreemptionPolicy
	if policy == "" {
		policy = v4.PreemptLowerPriority
	}
	desc := pc.Description
	if desc == "" {
		desc = none
	}
	return []string{pc.Metadata.Name, strconv.Itoa(pc.Value), strconv.FormatBool(pc.GlobalDefault), policy, desc}
}
