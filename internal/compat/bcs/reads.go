package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// Reads go through /v1 like writes, so a token reads through BCS's routes what it may
// read through /v1 and nothing more.

// listOf reads a /v1 list of plural in ns into items.
func listOf[T any](h *Handler, r *http.Request, ns, plural string) ([]T, *failure) {
	items, a := v1call.List[T](h.v1, r, v1call.Path("namespaces", ns, plural))
	if a != nil {
		f := failureOf(*a, false)
		return nil, &f
	}
	return items, nil
}

// one reads a /v1 object into T.
func one[T any](h *Handler, r *http.Request, ns, plural, name string) (*T, *failure) {
	v, a := v1call.Get[T](h.v1, r, v1call.Path("namespaces", ns, plural, name))
	if a != nil {
		f := failureOf(*a, false)
		return nil, &f
	}
	return v, nil
}

// workloadKind is the kind of an applications or processes path.
func workloadKind(plural string) v4.Kind {
	if plural == "processes" {
		return v4.KindProcess
	}
	return v4.KindApplication
}

// taskGroupsByOwner groups a namespace's task groups by owner name, for one kind, in
// index order.
func (h *Handler) taskGroupsByOwner(r *http.Request, ns string, kind v4.Kind) (map[string][]*v4.TaskGroup, *failure) {
	tgs, f := listOf[*v4.TaskGroup](h, r, ns, "taskgroups")
	if f != nil {
		return nil, f
	}
	by := map[string][]*v4.TaskGroup{}
	for _, tg := range tgs {
		if tg.Spec.Owner.Kind == kind {
			by[tg.Spec.Owner.Name] = append(by[tg.Spec.Owner.Name], tg)
		}
	}
	for _, list := range by {
		sort.Slice(list, func(i, j int) bool { return list[i].Spec.Index < list[j].Spec.Index })
	}
	return by, nil
}

func (h *Handler) listWorkloads(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, kind := r.PathValue("ns"), workloadKind(plural)
		items, f := listOf[*v4.Workload](h, r, ns, plural)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		by, f := h.taskGroupsByOwner(r, ns, kind)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		out := []bcsApplication{}
		for _, wl := range items {
			out = append(out, applicationOf(wl, kind, by[wl.Metadata.Name], h.clusterName(r)))
		}
		writeSuccess(w, out, nil)
	}
}

func (h *Handler) getWorkload(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wl, kind, tgs, f := h.workloadTaskGroups(r, plural)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		writeSuccess(w, applicationOf(wl, kind, tgs, h.clusterName(r)), nil)
	}
}

func (h *Handler) taskGroups(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wl, _, tgs, f := h.workloadTaskGroups(r, plural)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		out := []bcsTaskGroup{}
		for _, tg := range tgs {
			out = append(out, taskGroupOf(tg, wl.RestartPolicy, h.clusterName(r)))
		}
		writeSuccess(w, out, nil)
	}
}

// workloadTaskGroups reads the path's application or process (which must exist; a
// process in place of a missing application, asapplication.go), its kind and its task
// groups, by index.
func (h *Handler) workloadTaskGroups(r *http.Request, plural string) (*v4.Workload, v4.Kind, []*v4.TaskGroup, *failure) {
	wl, plural, f := h.workloadOf(r, plural)
	if f != nil {
		return nil, "", nil, f
	}
	kind := workloadKind(plural)
	by, f := h.taskGroupsByOwner(r, r.PathValue("ns"), kind)
	if f != nil {
		return nil, "", nil, f
	}
	return wl, kind, by[r.PathValue("name")], nil
}

// versions lists the versions berth keeps of an application: the definition stored now.
func (h *Handler) versions(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wl, _, f := h.workloadOf(r, plural)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		writeSuccess(w, []string{versionID(wl.Metadata)}, nil)
	}
}

func (h *Handler) version(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("ns"), r.PathValue("name")
		wl, plural, f := h.workloadOf(r, plural)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		if id := r.PathValue("version"); id != versionID(wl.Metadata) {
			writeFailure(w, failure{code: CodeNotFound,
				message: fmt.Sprintf("%s %s/%s has no version %s: berth keeps the current definition only (version %s)", workloadKind(plural), ns, name, id, versionID(wl.Metadata))})
			return
		}
		a := h.v1.Call(r, http.MethodGet, v1call.Path("namespaces", ns, plural, name, "definition"), nil, nil)
		if !a.OK() {
			writeFailure(w, failureOf(a, false))
			return
		}
		v := bcsVersion{ID: versionID(wl.Metadata), Name: versionID(wl.Metadata), ObjectMeta: metaOf(wl.Metadata, h.clusterName(r)),
			Instances: wl.Spec.Instance, RunAs: ns, Labels: wl.Metadata.Labels, KillPolicy: wl.KillPolicy,
			RestartPolicy: restartPolicyOf(wl.RestartPolicy), Kind: string(workloadKind(plural))}
		if json.Valid(a.Body) {
			v.RawJSON = a.Body
		}
		writeSuccess(w, v, nil)
	}
}

func (h *Handler) listDeployments(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	ds, f := listOf[*v4.Deployment](h, r, ns, "deployments")
	if f != nil {
		writeFailure(w, *f)
		return
	}
	children, f := h.deploymentChildren(r, ns)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	out := []bcsDeployment{}
	for _, d := range ds {
		out = append(out, deploymentOf(d, children[d.Metadata.Name], h.clusterName(r)))
	}
	writeSuccess(w, out, nil)
}

func (h *Handler) getDeployment(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	d, f := h.deployment(r, ns, name)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	children, f := h.deploymentChildren(r, ns)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	writeSuccess(w, deploymentOf(d, children[name], h.clusterName(r)), nil)
}

// deploymentChildren are the applications and processes of ns that deployments control,
// by deployment name.
func (h *Handler) deploymentChildren(r *http.Request, ns string) (map[string][]*v4.Workload, *failure) {
	by := map[string][]*v4.Workload{}
	for _, plural := range []string{"applications", "processes"} {
		items, f := listOf[*v4.Workload](h, r, ns, plural)
		if f != nil {
			return nil, f
		}
		for _, wl := range items {
			if owner, ok := controllingDeployment(wl.Metadata); ok {
				by[owner] = append(by[owner], wl)
			}
		}
	}
	return by, nil
}

func controllingDeployment(m v4.ObjectMeta) (string, bool) {
	return strings.CutPrefix(m.Annotations[v4.ControlledByAnnotation], "deployment/")
}

// clusterName is the cluster the client addressed.
func (h *Handler) clusterName(r *http.Request) string { return r.Header.Get(ClusterHeader) }
