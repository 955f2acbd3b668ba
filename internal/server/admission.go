package server

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

// One admission chain for every write of a user's object: a create, an update, an apply
// and a delete, through /v1 or through BCS's and deployd's APIs (which turn into /v1
// calls, compat.go). The body is decoded, defaulted and validated first (readDocuments,
// v4.Parse); then each object passes authorizeSteps, which read nothing stored, and then
// storeSteps, which judge it against what is stored. Every object of a request passes the
// first before any is looked up in the second, so that a request without the rights for
// one of its objects gets its 403 before it learns anything of the stored state.

// admitOp is what a write does with its objects.
type admitOp int

const (
	opCreate admitOp = iota // POST of one object: it is new
	opUpdate                // PUT of one object: it replaces the stored one
	opApply                 // an apply stream: each creates or replaces
	opDelete                // DELETE: the target has no object
)

// An admission is one write request on its way to the store: who asks (r), what it
// does, and every document it writes, so that a step can count the other objects of the
// same stream (a configmap applied with the workload naming it) and read the store once
// per request rather than once per object.
type admission struct {
	s    *Server
	r    *http.Request
	op   admitOp
	docs []v4.Document
	// seen and services keep what checkServicePorts and checkLBClaims read for earlier
	// objects of the request.
	seen     map[string]map[string]v4.Object
	services []v4.Object
	// subResource and old are for the admission webhooks (admit_webhook.go): the action
	// of a write the server makes for the user ("scale", "rollout/undo"), and the stored
	// object it changes when the caller has read it already.
	subResource string
	old         v4.Object
	// quota keeps, per namespace, its limits and objects as admitQuota counts them, and
	// the namespaces' locks it holds until done.
	quota quotaAdmission
}

func (s *Server) newAdmission(r *http.Request, op admitOp, docs []v4.Document) *admission {
	return &admission{s: s, r: r, op: op, docs: docs, seen: map[string]map[string]v4.Object{}}
}

// target is what a step judges: the object written, or for a delete (obj nil) the one
// the path names.
type target struct {
	kind     v4.Kind
	ns, name string
	obj      v4.Object
}

func targetOf(obj v4.Object) target {
	m := obj.GetMeta()
	return target{kind: obj.GetKind(), ns: m.Namespace, name: m.Name, obj: obj}
}

// admitStep is one step of the chain: nil lets the target on, an error is the answer.
type admitStep func(ctx context.Context, a *admission, t target) error

// authorizeSteps judge what the requester may do, reading nothing stored.
var authorizeSteps = []admitStep{
	admitRight,      // write on the target's kind in its namespace
	admitPrivileges, // the privileges its pods ask for (authz.go)
	admitReach,      // what it reaches in other namespaces (admit_dependency.go)
	admitSubmitter,  // a workflow records who wrote it (admit_resource.go)
	// the objects of its resource templates, as writes of the requester (admit_resource.go)
	admitResourceSteps,
}

// storeSteps judge the target against the stored state.
var storeSteps = []admitStep{
	admitUncontrolled,  // a controller's object is changed through its owner (operations.go)
	admitUnused,        // a deleted object nobody uses (dependencies.go, references.go)
	admitReferences,    // the configmaps and secrets it names exist (references.go)
	admitVolumeClaims,  // its write claims are of volumes that take writers (admit_volume_claims.go)
	admitVolumeSpec,    // a volume keeps what its plugin has, and its storage is its own (admit_volume_spec.go)
	admitQuota,         // limit defaults, maxima per task, the namespace's quota (admit_quota.go)
	admitGPUShares,     // a card of the cluster can hold its GPU share (admit_gpu.go)
	admitServicePorts,  // a service's named ports exist (admit_service.go)
	admitLBClaims,      // a service's load-balancer claims are free (admit_lbgroup.go)
	admitWorkflowRefs,  // a workflow's templateRefs name stored workflowtemplates (admit_workflow.go)
	admitArtifactRepos, // artifact repositories exist, one default a namespace (admit_artifacts.go)
	admitSchedule,      // a schedule fires at most once a minute unless allowed (admit_cron.go)
	admitPriority,      // its priority class exists and is the requester's to use (priorityclass.go)
}

// admit runs the chain on every target of a: authorizeSteps on all, the admission
// webhooks (admit_webhook.go), then storeSteps. A webhook's change replaces the target
// and its document in a.docs: the caller writes a.docs.
func (a *admission) admit(ctx context.Context, targets ...target) error {
	for _, t := range targets {
		if err := a.run(ctx, t, authorizeSteps); err != nil {
			return err
		}
	}
	if err := a.callHooks(ctx, targets); err != nil {
		return err
	}
	for _, t := range targets {
		if err := a.run(ctx, t, storeSteps); err != nil {
			return err
		}
	}
	return nil
}

// authorize runs authorizeSteps alone, for an object the server changes on the
// requester's behalf from a stored one (a rollout's undo restoring an older template).
func (a *admission) authorize(ctx context.Context, obj v4.Object) error {
	return a.run(ctx, targetOf(obj), authorizeSteps)
}

func (a *admission) run(ctx context.Context, t target, steps []admitStep) error {
	for _, step := range steps {
		if err := step(ctx, a, t); err != nil {
			return err
		}
	}
	return nil
}

// targetsOf are the objects of docs.
func targetsOf(docs []v4.Document) []target {
	out := make([]target, len(docs))
	for i, d := range docs {
		out[i] = targetOf(d.Object)
	}
	return out
}

func admitRight(_ context.Context, a *admission, t target) error {
	return a.s.check(identityOf(a.r), acl.Request{Verb: acl.VerbWrite, Kind: string(t.kind), Namespace: t.ns})
}

func admitPrivileges(_ context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	return a.s.checkPrivileges(a.r, t.obj)
}

func admitReach(_ context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	return a.s.admitReads(a.r, t.obj)
}

func admitUncontrolled(ctx context.Context, a *admission, t target) error {
	switch a.op {
	case opCreate:
		return nil // a new object has no owner; an existing one is a 409 of the create
	case opApply:
		// The store refuses it on the version it replaces (handleApply); this local read
		// only says so before the later checks, without waiting for etcd.
		return a.s.refuseIfControlledLocal(ctx, t.kind, t.ns, t.name)
	}
	return a.s.refuseIfControlled(ctx, t.kind, t.ns, t.name)
}

func admitUnused(ctx context.Context, a *admission, t target) error {
	switch {
	case a.op != opDelete:
		return nil
	case t.kind == v4.KindDependency:
		return a.s.checkDependencyDelete(ctx, a.r)
	case t.kind == v4.KindConfigMap || t.kind == v4.KindSecret:
		return a.s.checkConfigDelete(ctx, a.r, t.kind)
	}
	return nil
}

func admitReferences(ctx context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	return a.s.checkReferences(ctx, t.obj, a.docs)
}

func admitGPUShares(_ context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	return a.s.checkGPUShares(t.obj)
}

func admitServicePorts(ctx context.Context, a *admission, t target) error {
	svc, ok := t.obj.(*v4.Service)
	if !ok {
		return nil
	}
	return a.s.checkServicePorts(ctx, svc, a.docs, a.seen)
}

func admitLBClaims(ctx context.Context, a *admission, t target) error {
	svc, ok := t.obj.(*v4.Service)
	if !ok {
		return nil
	}
	return a.s.checkLBClaims(ctx, svc, a.docs, &a.services)
}
