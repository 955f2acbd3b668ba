package bcs

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS's storage service (bcs-storage) is where bcs-client reads what it lists and
// inspects, and where its apply and clean look an object up before they create, update
// or delete it. berth serves the routes bcs-client calls from its own state, through /v1
// with the caller's identity like every BCS route (docs/compat.md).

// StoragePrefix is where the BCS gateway served bcs-storage.
const StoragePrefix = "/bcsapi/v4/storage"

// Storage lists are answered a bounded page at a time: bcs-client asks without a limit and
// reads one answer, so a page of storageMaxLimit items is the most one answer holds; the
// rest is asked for with offset, which a warning on the answer names.
const (
	storageMaxLimit = 500
	// storageMaxBody bounds a list's conditions (a small JSON object of strings).
	storageMaxBody = 64 << 10
)

// storageNotExist is the message of an absent object: bcs-client's apply and clean read
// "resource does not exist" (or "not found") in the failure as absence, and create
// instead of failing (or skip the delete).
const storageNotExist = "resource does not exist"

// storageType is one of the types bcs-client reads from storage.
type storageType struct {
	list func(h *Handler, r *http.Request, ns string) ([]storageItem, *failure)
	get  func(h *Handler, r *http.Request, ns, name string) (*storageItem, *failure)
}

// storageItem is one stored document: BCS storage's meta around data, the object.
type storageItem struct {
	ID           string    `json:"_id"`
	ClusterID    string    `json:"clusterId"`
	Namespace    string    `json:"namespace"`
	ResourceName string    `json:"resourceName"`
	ResourceType string    `json:"resourceType"`
	Data         any       `json:"data"`
	CreateTime   time.Time `json:"createTime"`
	UpdateTime   time.Time `json:"updateTime"`
}

func itemOf(m v4.ObjectMeta, updated time.Time, data any) storageItem {
	if updated.IsZero() {
		updated = m.CreationTimestamp
	}
	return storageItem{Namespace: m.Namespace, ResourceName: m.Name, Data: data, CreateTime: m.CreationTimestamp, UpdateTime: updated}
}

// storageTypes are the types served, by bcs-client's name of them.
var storageTypes = map[string]storageType{
	"application": workloadType("applications"),
	"process":     workloadType("processes"),
	"taskgroup":   {list: listPods, get: getPod},
	"deployment":  {list: listStoredDeployments, get: getStoredDeployment},
	"service":     documentType("services"),
	"configmap":   documentType("configmaps"),
	"secret":      documentType("secrets"),
}

// NewStorage returns the storage routes over inner, the server's /v1 handler; clusterID
// as for New.
func NewStorage(inner http.Handler, clusterID string) http.Handler {
	h := &Handler{v1: v1call.Caller{Inner: inner, Big: v1call.NewGate(bigLists)}, clusterID: clusterID, maxBody: storageMaxBody, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /query/mesos/dynamic/clusters/{cluster}/{type}", h.storageList)
	h.mux.HandleFunc("POST /query/mesos/dynamic/clusters/{cluster}/{type}", h.storageList)
	h.mux.HandleFunc("GET /query/mesos/dynamic/clusters/{cluster}/namespace", h.storageNamespaces)
	h.mux.HandleFunc("GET /mesos/dynamic/namespace_resources/clusters/{cluster}/namespaces/{ns}/{type}/{name}", h.storageGet)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound,
			message: fmt.Sprintf("no BCS storage route for %s %s (docs/compat.md lists them)", r.Method, r.URL.Path)})
	})
	return storageDoor{h}
}

type storageDoor struct{ h *Handler }

// ServeHTTP strips the prefix, reads the (small) body and serves the route. The cluster
// is in the path; the header, when sent, must name the same one.
func (d storageDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), StoragePrefix)
	u, err := url.Parse(rest)
	if !ok || err != nil || !strings.HasPrefix(rest, "/") {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound, message: "no BCS storage route for " + r.URL.Path})
		return
	}
	trimSlash(u)
	if path.Clean(u.Path) != u.Path {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound, message: fmt.Sprintf("bad path: %q is not a clean path", u.Path)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, storageMaxBody))
	if err != nil {
		writeFailure(w, failure{code: CodeBadRequestData, message: fmt.Sprintf("read the conditions (at most %d bytes): %v", storageMaxBody, err)})
		return
	}
	routed := r.Clone(r.Context())
	routed.URL.Path, routed.URL.RawPath = u.Path, u.RawPath
	routed.Body = io.NopCloser(bytes.NewReader(body))
	d.h.mux.ServeHTTP(w, v1call.WithBody(routed, body))
}

// storageCluster checks the path's cluster: the server's, and the header's when sent.
func (h *Handler) storageCluster(r *http.Request) *failure {
	id := r.PathValue("cluster")
	if h.clusterID != "" && id != h.clusterID {
		return &failure{status: http.StatusBadRequest, code: CodeHeaderCheck,
			message: fmt.Sprintf("cluster %q is not this cluster (%s)", id, h.clusterID)}
	}
	if hdr := r.Header.Get(ClusterHeader); hdr != "" && hdr != id {
		return &failure{status: http.StatusBadRequest, code: CodeHeaderCheck,
			message: fmt.Sprintf("the %s header %q is not the path's cluster %q", ClusterHeader, hdr, id)}
	}
	r.Header.Set(ClusterHeader, id) // the objects' clusterName (the request is the door's clone)
	return nil
}

// storageRoute checks the path's cluster and type.
func (h *Handler) storageRoute(r *http.Request) (storageType, string, *failure) {
	if f := h.storageCluster(r); f != nil {
		return storageType{}, "", f
	}
	name := r.PathValue("type")
	t, ok := storageTypes[name]
	if !ok {
		return storageType{}, "", &failure{code: CodeDriverParameter,
			message: fmt.Sprintf("type %q is not served (application, process, taskgroup, deployment, service, configmap or secret)", name)}
	}
	return t, name, nil
}

// storageNamespaces answers the names of the namespaces the caller may read (bcs-client's
// list of namespaces).
func (h *Handler) storageNamespaces(w http.ResponseWriter, r *http.Request) {
	if f := h.storageCluster(r); f != nil {
		writeFailure(w, *f)
		return
	}
	list, a := v1call.Get[v4.NamespaceList](h.v1, r, "/v1/namespaces")
	if a != nil {
		writeFailure(w, failureOf(*a, false))
		return
	}
	writeSuccess(w, list.Items, nil)
}

func (h *Handler) storageGet(w http.ResponseWriter, r *http.Request) {
	t, name, f := h.storageRoute(r)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	it, f := t.get(h, r, r.PathValue("ns"), r.PathValue("name"))
	if f != nil {
		if f.code == CodeNotFound && f.status == 0 {
			f.message = storageNotExist + ": " + f.message
		}
		writeFailure(w, *f)
		return
	}
	h.finishItem(r, it, name)
	writeSuccess(w, it, nil)
}

func (h *Handler) finishItem(r *http.Request, it *storageItem, typ string) {
	it.ClusterID, it.ResourceType = r.PathValue("cluster"), typ
	it.ID = it.ClusterID + "/" + it.Namespace + "/" + typ + "/" + it.ResourceName
}
