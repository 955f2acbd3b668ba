package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/berthhq/berth/api/cron"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// CronRunName is the name of the run of cron object name scheduled for t: the name
// and the unix minute, or the unix second for a schedule that fires more than once a
// minute. It depends on the scheduled time alone, so two leaders that find the same
// time due make the same name and the second gets "exists".
func CronRunName(name string, t time.Time, s *cron.Schedule) string {
	if v4.SubMinute(s) {
		return name + "-" + strconv.FormatInt(t.Unix(), 10)
	}
	return name + "-" + strconv.FormatInt(t.Unix()/60, 10)
}

// manualRunName is the name of a run triggered by hand at now: "-m" and the unix
// milliseconds in base 36, which no scheduled run's name (digits only) can be.
func manualRunName(name string, now time.Time) string {
	return name + "-m" + strconv.FormatInt(now.UnixMilli(), 36)
}

// NewCronRun builds the job or the workflow that cron object obj runs, named name,
// labelled with its parent and annotated with the time it was scheduled for (none for a
// manual run). The spec is a deep copy: obj may be a cache's.
func NewCronRun(obj v4.Object, name string, scheduled time.Time) (v4.Object, error) {
	m := obj.GetMeta()
	var run v4.Object
	var tmpl *v4.TemplateMeta
	switch c := obj.(type) {
	case *v4.CronJob:
		t := &c.Spec.JobTemplate
		run, tmpl = &v4.Job{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindJob},
			KillPolicy: t.KillPolicy, Constraint: t.Constraint, Spec: t.Spec}, t.Metadata
	case *v4.CronWorkflow:
		run, tmpl = &v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindWorkflow},
			Spec: c.Spec.WorkflowSpec}, c.Spec.WorkflowMetadata
	default:
		return nil, fmt.Errorf("%s is not a cron kind", obj.GetKind())
	}
	run, err := deepCopy(run)
	if err != nil {
		return nil, fmt.Errorf("copy the template of %s %s/%s: %w", obj.GetKind(), m.Namespace, m.Name, err)
	}
	meta := run.GetMeta()
	*meta = v4.ObjectMeta{Name: name, Namespace: m.Namespace, Labels: map[string]string{}, Annotations: map[string]string{}}
	if tmpl != nil {
		maps.Copy(meta.Labels, tmpl.Labels)
		maps.Copy(meta.Annotations, tmpl.Annotations)
	}
	// Who submitted a workflow is the server's to record (a resource step acts with
	// their rights): the cronworkflow's writer, never a template's annotation.
	delete(meta.Annotations, v4.WfSubmitterAnnotation)
	if sub := m.Annotations[v4.WfSubmitterAnnotation]; sub != "" && run.GetKind() == v4.KindWorkflow {
		meta.Annotations[v4.WfSubmitterAnnotation] = sub
	}
	meta.Labels[v4.CronLabel(obj.GetKind())] = m.Name
	meta.Annotations[v4.ControlledByAnnotation] = string(obj.GetKind()) + "/" + m.Name
	if !scheduled.IsZero() {
		meta.Annotations[v4.ScheduledTimeAnnotation] = scheduled.UTC().Format(time.RFC3339)
	}
	if errs := v4.Validate(run); len(errs) > 0 {
		return nil, fmt.Errorf("the run of %s %s/%s is not valid: %w", obj.GetKind(), m.Namespace, m.Name, errs)
	}
	return run, nil
}

// deepCopy copies a job or a workflow through JSON.
func deepCopy(o v4.Object) (v4.Object, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	out, err := v4.New(o.GetKind())
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// TriggerCron creates a run of cron object kind ns/name now, as `berth cronjob trigger`
// asks: whatever its schedule, suspend and concurrency policy (as Kubernetes' `kubectl
// create job --from=cronjob/...`), and without moving lastScheduleTime. The run counts
// in the active list and the history like the others. allow, when set, judges the run
// before it is written (the requester's rights and privileges).
func TriggerCron(ctx context.Context, st *store.Store, kind v4.Kind, ns, name string, now time.Time, allow func(v4.Object) error) (v4.Object, error) {
	if _, ok := cronKinds[kind]; !ok {
		return nil, fmt.Errorf("%w: %s runs on no schedule (cronjobs and cronworkflows do)", store.ErrInvalid, kind)
	}
	obj, err := st.Get(ctx, kind, ns, name)
	if err != nil {
		return nil, err
	}
	run, err := NewCronRun(obj, manualRunName(name, now), time.Time{})
	if err != nil {
		return nil, err
	}
	if allow != nil {
		if err := allow(run); err != nil {
			return nil, err
		}
	}
	if err := st.Create(ctx, run, store.Raw{}); err != nil {
		return nil, fmt.Errorf("trigger %s %s/%s: %w", kind, ns, name, err)
	}
	return run, nil
}

// runState says whether a run finished, whether it succeeded, and when it finished.
func runState(o v4.Object) (done, ok bool, finished time.Time) {
	switch r := o.(type) {
	case *v4.Job:
		if !r.Status.Done() {
			return false, false, time.Time{}
		}
		fin := r.Status.CompletionTime
		for _, typ := range []string{v4.JobComplete, v4.JobFailed} {
			if c := r.Status.Condition(typ); c != nil && fin.IsZero() {
				fin = c.Time
			}
		}
		return true, r.Status.Condition(v4.JobComplete) != nil, fin
	case *v4.Workflow:
		if r.Status.Phase == "" || !v4.WfPhaseFinished(r.Status.Phase) {
			return false, false, time.Time{}
		}
		return true, r.Status.Phase == v4.WfSucceeded, r.Status.FinishedAt
	}
	return false, false, time.Time{}
}

// scheduledAt is the time a run was scheduled for, or for a manual one its creation.
func scheduledAt(o v4.Object) time.Time {
	m := o.GetMeta()
	if t, err := time.Parse(time.RFC3339, m.Annotations[v4.ScheduledTimeAnnotation]); err == nil {
		return t
	}
	return m.CreationTimestamp
}

// byScheduled orders runs oldest first: by scheduled time, then name.
func byScheduled(a, b v4.Object) int {
	return cmp.Or(scheduledAt(a).Compare(scheduledAt(b)), cmp.Compare(a.GetMeta().Name, b.GetMeta().Name))
}
