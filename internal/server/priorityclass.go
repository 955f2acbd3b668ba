package server

import (
	"context"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/scheduler"
)

// Priority classes (docs/policy.md, "Priorities and preemption"): cluster-wide objects
// that every user reads (to know which to name) and only an administrator (admin on
// cluster) writes, like namespace limits (quota.go).
func (s *Server) priorityClassRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/priorityclasses", httpapi.AnyUser, s.handlePriorityClassList)
	mux.Handle("GET /v1/priorityclasses/{name}", httpapi.AnyUser, s.handlePriorityClassGet)
	mux.Handle("PUT /v1/priorityclasses/{name}", adminCluster, s.handlePriorityClassPut)
	mux.Handle("DELETE /v1/priorityclasses/{name}", adminCluster, s.handlePriorityClassDelete)
}

func (s *Server) handlePriorityClassList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	classes, err := s.store.PriorityClasses(ctx)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, v4.PriorityClassList{Kind: "List", Items: classes})
	return nil
}

// priorityClassName is the path's class name, or the 400 of one no class can have.
func priorityClassName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if !v4.ValidPriorityClassName(name) {
		return "", httpapi.Errorf(http.StatusBadRequest, "%q is not a priority class name", truncateText(name, 80)).
			WithDetail("name", "lowercase letters, digits, '-' and '.', at most 253")
	}
	return name, nil
}

func (s *Server) handlePriorityClassGet(w http.ResponseWriter, r *http.Request) error {
	name, err := priorityClassName(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	pc, err := s.store.PriorityClass(ctx, name)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, pc)
	return nil
}

// handlePriorityClassPut creates or replaces the class of the path from a JSON body.
func (s *Server) handlePriorityClassPut(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var pc v4.PriorityClass
	if err := httpapi.DecodeStrict(body, &pc); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a priority class: %v", err).
			WithDetail("value", `send {"metadata":{"name":N},"value":V,"preemptionPolicy":"PreemptLowerPriority"|"Never","globalDefault":B,"description":D}`)
	}
	name := r.PathValue("name")
	if pc.Metadata.Name == "" {
		pc.Metadata.Name = name
	}
	fe := pc.Validate()
	if pc.Metadata.Name != name {
		fe = append(fe, v4.FieldError{Field: "metadata.name", Message: fmt.Sprintf("%q is not the path's name %q", pc.Metadata.Name, name)})
	}
	if pc.Kind != "" && pc.Kind != v4.KindPriorityClass {
		fe = append(fe, v4.FieldError{Field: "kind", Message: fmt.Sprintf("%q is not %s", pc.Kind, v4.KindPriorityClass)})
	}
	if len(fe) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage("priority class "+name, fe))
		ae.Details = fe
		return ae
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.store.PutPriorityClass(ctx, &pc); err != nil {
		return err
	}
	s.store.QueueEvent(v4.Event{Type: v4.EventNormal, Reason: "PriorityClassSet", Kind: v4.KindPriorityClass, Name: name,
		Message: fmt.Sprintf("priority class %s: value %d, %s, global default %v", name, pc.Value, policyOf(&pc), pc.GlobalDefault)})
	stored, err := s.store.PriorityClass(ctx, name)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, stored)
	return nil
}

func (s *Server) handlePriorityClassDelete(w http.ResponseWriter, r *http.Request) error {
	name, err := priorityClassName(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.store.DeletePriorityClass(ctx, name); err != nil {
		return err
	}
	s.store.QueueEvent(v4.Event{Type: v4.EventNormal, Reason: "PriorityClassDeleted", Kind: v4.KindPriorityClass, Name: name,
		Message: "priority class " + name + " deleted"})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func policyOf(pc *v4.PriorityClass) string {
	if pc.PreemptionPolicy == "" {
		return v4.PreemptLowerPriority
	}
	return pc.PreemptionPolicy
}

// PrivPriority is the workload privilege (acl) that naming a class above the default
// needs: without it a namespace's workloads wait their turn at the default priority or
// below, and cannot evict other teams' work.
const PrivPriority = acl.PrivPriority

// admitPriority resolves a workload's, job's, daemonset's or workflow's priority class (or the global default)
// into spec.priority and spec.preemptionPolicy, and refuses what the requester may not
// ask for: an unknown class, spec.priority set by anyone but an administrator, a system
// class (above v4.MaxUserPriority) by anyone but an administrator, a class above the
// default without the privilege "priority".
func admitPriority(ctx context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	sched, path := schedulingOf(t.obj)
	if sched == nil {
		return nil
	}
	return a.s.resolvePriority(ctx, identityOf(a.r), t, sched, path)
}

// schedulingOf is the scheduling fields of obj and their parent's path (nil when obj
// has none).
func schedulingOf(obj v4.Object) (*v4.Scheduling, string) {
	switch o := obj.(type) {
	case *v4.Application:
		return &o.Spec.Scheduling, "spec"
	case *v4.Process:
		return &o.Spec.Scheduling, "spec"
	case *v4.Deployment:
		return &o.Spec.Scheduling, "spec"
	case *v4.Job:
		return &o.Spec.Scheduling, "spec"
	case *v4.CronJob:
		return &o.Spec.JobTemplate.Spec.Scheduling, "spec.jobTemplate.spec"
	case *v4.Daemonset:
		return &o.Spec.Scheduling, "spec"
	case *v4.Workflow:
		return &o.Spec.Scheduling, "spec"
	case *v4.WorkflowTemplate:
		return &o.Spec.Scheduling, "spec"
	case *v4.CronWorkflow:
		return &o.Spec.WorkflowSpec.Scheduling, "spec.workflowSpec"
	}
	return nil, ""
}

func (s *Server) resolvePriority(ctx context.Context, id *acl.Identity, t target, sched *v4.Scheduling, path string) error {
	value, base, policy, err := s.classOf(ctx, sched, path)
	if err != nil {
		return err
	}
	admin := id.Allowed(acl.Request{Verb: acl.VerbAdmin, Kind: acl.KindCluster})
	if err := checkPriorityRights(id, admin, t, sched, path, value, base); err != nil {
		return err
	}
	if sched.Priority == nil || !admin {
		sched.Priority = &value
	}
	if sched.PreemptionPolicy != v4.PreemptNever { // a workload may give up preempting, not claim it
		sched.PreemptionPolicy = policy
	}
	return nil
}

// classOf is the value and policy of the class sched names (the global default when it
// names none; 0 and PreemptLowerPriority without one), and the default's value.
func (s *Server) classOf(ctx context.Context, sched *v4.Scheduling, path string) (value, base int, policy string, err error) {
	classes, err := s.store.CachedPriorityClasses(ctx)
	if err != nil {
		return 0, 0, "", err
	}
	var class, def *v4.PriorityClass
	for _, c := range classes {
		if c.GlobalDefault {
			def = c
		}
		if c.Metadata.Name == sched.PriorityClassName {
			class = c
		}
	}
	if sched.PriorityClassName != "" && class == nil {
		return 0, 0, "", httpapi.Errorf(http.StatusUnprocessableEntity, "%s.priorityClassName: priority class %q does not exist", path, sched.PriorityClassName).
			WithDetail(path+".priorityClassName", "no such priority class (berth get priorityclasses)")
	}
	if class == nil {
		class = def
	}
	policy = v4.PreemptLowerPriority
	if def != nil {
		base = def.Value
	}
	if class != nil {
		value, policy = class.Value, policyOf(class)
	}
	return value, base, policy, nil
}

func checkPriorityRights(id *acl.Identity, admin bool, t target, sched *v4.Scheduling, path string, value, base int) error {
	switch {
	case admin:
		return nil
	case sched.Priority != nil && *sched.Priority != value:
		return httpapi.Errorf(http.StatusForbidden, "%s.priority: only an administrator sets a priority; %s may name a priority class", path, id).
			WithDetail(path+".priority", fmt.Sprintf("leave it out or set it to the class's value %d", value))
	case value > v4.MaxUserPriority:
		return httpapi.Errorf(http.StatusForbidden, "%s.priorityClassName: class %s has the system priority %d (above %d): only an administrator uses it",
			path, sched.PriorityClassName, value, v4.MaxUserPriority).WithDetail(path+".priorityClassName", "a system class")
	case value > base && !id.Allowed(acl.Request{Verb: acl.VerbWrite, Kind: string(t.kind), Namespace: t.ns, Privilege: PrivPriority}):
		req := acl.Request{Verb: acl.VerbWrite, Kind: string(t.kind), Namespace: t.ns, Privilege: PrivPriority}
		return httpapi.Errorf(http.StatusForbidden, "%s.priorityClassName: %s may not %s: class %s (%d) is above the default priority (%d); no policy grants the privilege",
			path, id, req, sched.PriorityClassName, value, base).WithDetail(path+".priorityClassName", "needs the privilege "+PrivPriority)
	}
	return nil
}

// planPriority resolves the priority of an object a plan places, as admission would,
// without judging the requester's rights to it (a plan writes nothing).
func (s *Server) planPriority(ctx context.Context, obj v4.Object) error {
	sched, path := schedulingOf(obj)
	if sched == nil || sched.Priority != nil {
		return nil
	}
	value, _, policy, err := s.classOf(ctx, sched, path)
	if err != nil {
		return err
	}
	sched.Priority = &value
	if sched.PreemptionPolicy != v4.PreemptNever {
		sched.PreemptionPolicy = policy
	}
	return nil
}

// fillPreemptions copies a plan's preemptions into the API's shape; victims the caller
// may not read (another tenant's) are only counted.
func fillPreemptions(p *v4.PlanObject, pre []scheduler.Preemption, id *acl.Identity) {
	for _, x := range pre {
		out := v4.PlanPreemption{Index: x.Index, Node: x.Node, Victims: make([]v4.PlanVictim, 0, len(x.Victims))}
		for _, v := range x.Victims {
			if !id.Allowed(acl.Request{Verb: acl.VerbRead, Kind: string(v.Owner.Kind), Namespace: v.Namespace}) {
				out.Hidden++
				continue
			}
			out.Victims = append(out.Victims, v4.PlanVictim{Kind: v.Owner.Kind, Namespace: v.Namespace, Name: v.Owner.Name,
				TaskGroup: v.Name, Index: v.Index, Priority: int(v.Priority)})
		}
		p.Preemptions = append(p.Preemptions, out)
	}
}
