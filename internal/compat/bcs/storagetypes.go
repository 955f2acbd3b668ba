package bcs

import (
	"encoding/json"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// How each storage type is read through /v1 and put in storage's shape.

func workloadType(plural string) storageType {
	kind := workloadKind(plural)
	return storageType{
		list: func(h *Handler, r *http.Request, ns string) ([]storageItem, *failure) {
			wls, f := listOf[*v4.Workload](h, r, ns, plural)
			if f != nil || len(wls) == 0 {
				return nil, f
			}
			by, f := h.taskGroupsByOwner(r, ns, kind)
			if f != nil {
				return nil, f
			}
			out := make([]storageItem, 0, len(wls))
			for _, wl := range wls {
				out = append(out, itemOf(wl.Metadata, wl.Status.Updated, storageRCOf(wl, kind, by[wl.Metadata.Name], h.clusterName(r))))
			}
			return out, nil
		},
		get: func(h *Handler, r *http.Request, ns, name string) (*storageItem, *failure) {
			wl, f := one[v4.Workload](h, r, ns, plural, name)
			if f != nil {
				return nil, f
			}
			by, f := h.taskGroupsByOwner(r, ns, kind)
			if f != nil {
				return nil, f
			}
			it := itemOf(wl.Metadata, wl.Status.Updated, storageRCOf(wl, kind, by[name], h.clusterName(r)))
			return &it, nil
		},
	}
}

func listPods(h *Handler, r *http.Request, ns string) ([]storageItem, *failure) {
	tgs, f := listOf[*v4.TaskGroup](h, r, ns, "taskgroups")
	if f != nil {
		return nil, f
	}
	out := make([]storageItem, 0, len(tgs))
	for _, tg := range tgs {
		out = append(out, itemOf(tg.Metadata, tg.Status.Updated, storagePodOf(tg, h.clusterName(r))))
	}
	return out, nil
}

func getPod(h *Handler, r *http.Request, ns, name string) (*storageItem, *failure) {
	tg, f := one[v4.TaskGroup](h, r, ns, "taskgroups", name)
	if f != nil {
		return nil, f
	}
	it := itemOf(tg.Metadata, tg.Status.Updated, storagePodOf(tg, h.clusterName(r)))
	return &it, nil
}

func listStoredDeployments(h *Handler, r *http.Request, ns string) ([]storageItem, *failure) {
	ds, f := listOf[*v4.Deployment](h, r, ns, "deployments")
	if f != nil || len(ds) == 0 {
		return nil, f
	}
	children, f := h.deploymentChildren(r, ns)
	if f != nil {
		return nil, f
	}
	out := make([]storageItem, 0, len(ds))
	for _, d := range ds {
		out = append(out, itemOf(d.Metadata, d.Status.LastStep, deploymentOf(d, children[d.Metadata.Name], h.clusterName(r))))
	}
	return out, nil
}

func getStoredDeployment(h *Handler, r *http.Request, ns, name string) (*storageItem, *failure) {
	d, f := h.deployment(r, ns, name)
	if f != nil {
		return nil, f
	}
	children, f := h.deploymentChildren(r, ns)
	if f != nil {
		return nil, f
	}
	it := itemOf(d.Metadata, d.Status.LastStep, deploymentOf(d, children[name], h.clusterName(r)))
	return &it, nil
}

// documentType serves services, configmaps and secrets, which berth keeps as BCS's own
// documents. A list of secrets asks /v1 for their keys only: values go out only on a
// get, which /v1 answers only to a token that may read secrets.
func documentType(plural string) storageType {
	return storageType{
		list: func(h *Handler, r *http.Request, ns string) ([]storageItem, *failure) {
			var q url.Values
			if plural == "secrets" {
				q = url.Values{"keysOnly": {"true"}}
			}
			docs, a := v1call.ListQuery[json.RawMessage](h.v1, r, v1call.Path("namespaces", ns, plural), q)
			if a != nil {
				f := failureOf(*a, false)
				return nil, &f
			}
			out := make([]storageItem, 0, len(docs))
			for _, doc := range docs {
				out = append(out, documentItem(masked(plural, doc)))
			}
			return out, nil
		},
		get: func(h *Handler, r *http.Request, ns, name string) (*storageItem, *failure) {
			doc, f := one[json.RawMessage](h, r, ns, plural, name)
			if f != nil {
				return nil, f
			}
			it := documentItem(masked(plural, *doc))
			return &it, nil
		},
	}
}

// documentItem wraps a document, its meta read from it.
func documentItem(doc json.RawMessage) storageItem {
	var head struct {
		Metadata v4.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(doc, &head) // /v1's own answer: it has its metadata
	return itemOf(head.Metadata, head.Metadata.CreationTimestamp, doc)
}
