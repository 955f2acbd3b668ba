package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// Annotations on a deployment's applications.
const (
	// revisionAnnotation is the revision an application runs; hashAnnotation the
	// v4.TemplateHash of its template.
	revisionAnnotation = "berth.io/revision"
	hashAnnotation     = "berth.io/template-hash"
)

// child is one application (or process) of a deployment, with its task groups.
type child struct {
	obj      v4.Object
	w        *v4.Workload
	revision int
	hash     string
	byIndex  map[int][]*v4.TaskGroup // oldest run first
}

func (ch *child) name() string { return ch.w.Metadata.Name }

// ownerDeployment returns the deployment an application belongs to.
func ownerDeployment(m *v4.ObjectMeta) (string, bool) {
	return strings.CutPrefix(m.Annotations[v4.ControlledByAnnotation], "deployment/")
}

// indexDeployment indexes applications and processes by the deployment that owns them
// ("namespace/name"; "" for those of none).
const indexDeployment = "deployment"

func childOf(o v4.Object) string {
	m := o.GetMeta()
	owner, ok := ownerDeployment(m)
	if !ok {
		return ""
	}
	return m.Namespace + "/" + owner
}

// workloads returns views of the shared caches of applications and processes.
func (c *base) workloads() map[v4.Kind]*cacheView {
	views := map[v4.Kind]*cacheView{}
	for _, kind := range appKinds {
		views[kind] = &cacheView{cache: c.cache(kind)}
	}
	return views
}

// children lists the deployment's applications and processes, oldest revision first.
// They are copies of the cached objects whose fields the rollout sets (their maps and
// pointers are shared: replaced, never modified in place).
func (c *DeploymentController) children(ctx context.Context, key scheduler.AppKey) ([]*child, error) {
	var out []*child
	for _, kind := range appKinds {
		v := c.kids[kind]
		if err := v.caughtUp(ctx); err != nil {
			return nil, fmt.Errorf("%s of deployment %s: %w", kind.Plural(), key, err)
		}
		objs, _, err := v.cache.List(indexDeployment, key.Namespace+"/"+key.Name)
		if err != nil {
			return nil, fmt.Errorf("%s of deployment %s: %w", kind.Plural(), key, err)
		}
		for _, o := range objs {
			o = copyWorkload(o)
			m := o.GetMeta()
			rev, _ := strconv.Atoi(m.Annotations[revisionAnnotation])
			out = append(out, &child{obj: o, w: workload(o), revision: rev, hash: m.Annotations[hashAnnotation], byIndex: map[int][]*v4.TaskGroup{}})
		}
	}
	slices.SortFunc(out, func(a, b *child) int { return a.revision - b.revision })
	return out, nil
}

// copyWorkload is a copy of an application or process whose fields can be set.
func copyWorkload(o v4.Object) v4.Object {
	switch w := o.(type) {
	case *v4.Application:
		cp := *w
		return &cp
	case *v4.Process:
		cp := *w
		return &cp
	}
	return o
}

// wroteChild records a write of a child for the next reads (cacheView).
func (c *DeploymentController) wroteChild(ch *child) {
	if v := c.kids[ch.obj.GetKind()]; v != nil {
		v.wrote(ch.w.Metadata.ResourceVersion)
	}
}

// loadTaskGroups reads the task groups of the children from the shared cache.
func (c *DeploymentController) loadTaskGroups(ctx context.Context, children []*child) error {
	for _, ch := range children {
		tgs, err := c.tgs.ofOwner(ctx, ch.w.Metadata.Namespace, ch.obj.GetKind(), ch.name())
		if err != nil {
			return err
		}
		for _, tg := range tgs {
			ch.byIndex[tg.Spec.Index] = append(ch.byIndex[tg.Spec.Index], tg)
		}
	}
	for _, ch := range children {
		for _, tgs := range ch.byIndex {
			slices.SortFunc(tgs, func(a, b *v4.TaskGroup) int {
				if a.Spec.ReschedTimes != b.Spec.ReschedTimes {
					return a.Spec.ReschedTimes - b.Spec.ReschedTimes
				}
				return a.Metadata.CreationTimestamp.Compare(b.Metadata.CreationTimestamp)
			})
		}
	}
	return nil
}

// state is the child as the step arithmetic sees it: each wanted index is available when
// its current run is Running and, with local health checks, healthy.
func (ch *child) state() revision {
	r := revision{desired: ch.w.Spec.Instance, available: make([]bool, ch.w.Spec.Instance)}
	for i := range r.available {
		if v4.IsStopped(ch.w.Spec.StoppedInstances, i) { // stopped on request: as wanted
			r.available[i] = true
			continue
		}
		tgs := ch.byIndex[i]
		if len(tgs) == 0 {
			continue
		}
		r.available[i] = available(tgs[len(tgs)-1])
	}
	return r
}

// available: ready for traffic (Running, not stopping, passing its health checks).
func available(tg *v4.TaskGroup) bool {
	ok, _ := tg.Readiness()
	return ok
}

// failure describes an instance of the child that failed since the rollout's last step
// ("" when none): Failed or Error, killed by its health checks, or already replaced
// after such an end. A lost node is not the revision's fault and does not count.
func (ch *child) failure(since time.Time) string {
	for idx := range ch.w.Spec.Instance {
		for _, tg := range ch.byIndex[idx] {
			st := tg.Status
			ended := st.FinishedAt.IsZero() || st.FinishedAt.After(since)
			switch {
			case (st.Phase == v4.StatusFailed || st.Phase == v4.StatusError || st.HealthKilled) && ended:
				msg := fmt.Sprintf("instance %d of revision %d (%s) is %s", idx, ch.revision, tg.Metadata.Name, st.Phase)
				if st.Message != "" {
					msg += ": " + st.Message
				}
				return msg
			case tg.Spec.ReschedTimes > 0 && tg.Spec.LastRescheduled.After(since):
				return fmt.Sprintf("instance %d of revision %d was restarted after a failure (%s)", idx, ch.revision, tg.Metadata.Name)
			}
		}
	}
	return ""
}

// newChild builds the application (or process) of a revision of d.
func newChild(d *v4.Deployment, rev int, hash string, instances int) v4.Object {
	kind := v4.KindApplication
	if len(d.Spec.Template.Spec.Processes) > 0 {
		kind = v4.KindProcess
	}
	obj, _ := v4.New(kind) // both kinds are registered
	w := workload(obj)
	w.Metadata = v4.ObjectMeta{
		Name: fmt.Sprintf("%s-v%d", d.Metadata.Name, rev), Namespace: d.Metadata.Namespace,
		Annotations: map[string]string{
			v4.ControlledByAnnotation: "deployment/" + d.Metadata.Name,
			revisionAnnotation:        strconv.Itoa(rev),
			hashAnnotation:            hash,
		},
	}
	copyPolicies(d, w)
	w.Spec = v4.WorkloadSpec{Instance: instances, Template: *d.Spec.Template, StoppedInstances: stoppedOf(d, instances),
		Scheduling: d.Spec.Scheduling}
	return obj
}

// stoppedOf is the deployment's stopped instances for a child of n instances: every
// revision stops the same indexes, so a rollout keeps a stopped instance stopped
// (docs/lifecycle.md, "Stopped instances"). It is never nil: the store keeps a child's
// stored list when an update leaves it out.
func stoppedOf(d *v4.Deployment, n int) []int {
	return append([]int{}, v4.StoppedBelow(d.Spec.StoppedInstances, n)...)
}

// copyPolicies gives an application the deployment's labels and policies; it reports
// whether anything changed.
func copyPolicies(d *v4.Deployment, w *v4.Workload) bool {
	changed := !maps.Equal(w.Metadata.Labels, d.Metadata.Labels) ||
		!reflect.DeepEqual(w.RestartPolicy, d.RestartPolicy) || !reflect.DeepEqual(w.KillPolicy, d.KillPolicy) ||
		!reflect.DeepEqual(w.Constraint, d.Constraint)
	w.Metadata.Labels = maps.Clone(d.Metadata.Labels)
	w.RestartPolicy, w.KillPolicy, w.Constraint = d.RestartPolicy, d.KillPolicy, d.Constraint
	return changed
}

// setInstances writes a child's instance count (and the deployment's current policies).
func (c *DeploymentController) setInstances(ctx context.Context, d *v4.Deployment, ch *child, n int) error {
	changed := copyPolicies(d, ch.w)
	stopped := stoppedOf(d, n)
	if ch.w.Spec.Instance == n && !changed && slices.Equal(ch.w.Spec.StoppedInstances, stopped) {
		return nil
	}
	ch.w.Spec.Instance, ch.w.Spec.StoppedInstances = n, stopped
	// Written without a resourceVersion and without a status, so the application
	// controller's status writes neither conflict with this one nor get overwritten
	// (the store keeps the stored status); only berth changes these applications.
	ch.w.Metadata.ResourceVersion, ch.w.Status = "", v4.WorkloadStatus{}
	if err := c.store.Update(ctx, ch.obj, store.Raw{}); err != nil {
		return fmt.Errorf("set %s %s/%s to %d instances: %w", ch.obj.GetKind(), ch.w.Metadata.Namespace, ch.name(), n, err)
	}
	c.wroteChild(ch)
	return nil
}

// deleteChild deletes an application of the deployment; the application controller then
// stops its instances gracefully.
func (c *DeploymentController) deleteChild(ctx context.Context, ch *child) error {
	_, rev, err := c.store.DeleteAt(ctx, ch.obj.GetKind(), ch.w.Metadata.Namespace, ch.name(), "")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete %s %s/%s: %w", ch.obj.GetKind(), ch.w.Metadata.Namespace, ch.name(), err)
	}
	// The next pass must not find the old revision still in the cache: it would take the
	// rollout for unfinished and lock the deployment again (a scale just after the
	// rollout's end got a 423).
	if v := c.kids[ch.obj.GetKind()]; v != nil && rev > 0 {
		v.wroteAt(rev)
	}
	return nil
}
