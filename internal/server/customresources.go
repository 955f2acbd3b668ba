package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/customres"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// Custom resource definitions and custom resources (docs/api.md, "Custom resources").
// Definitions have routes of their own, under the cluster-wide ACL kind
// customresourcedefinition; a definition's resources are served by the object routes,
// with the definition's name (plural.group, which no kind of api/v4 has: they hold no
// ".") as the {plural}, under the namespaced ACL kind customresource.

func (s *Server) customResourceRoutes(mux *httpapi.Mux) {
	const crd = acl.KindCustomResourceDefinition
	mux.Handle("GET /v1/customresourcedefinitions", on(acl.VerbRead, crd), s.handleCRDList)
	mux.Handle("POST /v1/customresourcedefinitions", on(acl.VerbWrite, crd), s.handleCRDCreate)
	mux.Handle("GET /v1/customresourcedefinitions/{name}", on(acl.VerbRead, crd), s.handleCRDGet)
	mux.Handle("PUT /v1/customresourcedefinitions/{name}", on(acl.VerbWrite, crd), s.handleCRDUpdate)
	mux.Handle("DELETE /v1/customresourcedefinitions/{name}", on(acl.VerbWrite, crd), s.handleCRDDelete)
}

// customPlural reports whether the path's {plural} names a custom resource definition.
func customPlural(r *http.Request) (string, bool) {
	p := r.PathValue("plural")
	return p, strings.Contains(p, ".")
}

// customError is the answer to a document customres refuses: 422 naming the field, or
// 400 for a body that is not one JSON object.
func customError(subject string, err error) error {
	var ie *customres.InvalidError
	if errors.As(err, &ie) {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "invalid %s: %s: %s", subject, ie.Field, ie.Message).WithDetail(ie.Field, ie.Message)
	}
	if errors.Is(err, customres.ErrUnreadable) {
		return httpapi.Errorf(http.StatusBadRequest, "%s: %v", subject, err)
	}
	return err
}

// resourceVersionOf reads the precondition of a write: ?resourceVersion=, else the
// document's metadata.resourceVersion (0: none).
func resourceVersionOf(r *http.Request, doc customres.Doc) (int64, error) {
	rv := r.URL.Query().Get("resourceVersion")
	field := "resourceVersion"
	if rv == "" && doc != nil {
		if m, ok := doc["metadata"].(map[string]any); ok {
			rv, _ = m["resourceVersion"].(string)
			field = "metadata.resourceVersion"
		}
	}
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return 0, httpapi.Errorf(http.StatusBadRequest, "%s %q is not a positive integer", field, rv).WithDetail(field, "must be a positive integer")
	}
	return n, nil
}

// newUID is a random RFC 4122 version 4 UUID, as Kubernetes gives every object.
func newUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func now() string { return time.Now().UTC().Truncate(time.Second).Format(time.RFC3339) }

// writeDoc answers a stored document with its resourceVersion.
func writeDoc(w http.ResponseWriter, code int, d store.StoredDoc) error {
	doc, err := customres.Decode(d.Value, strconv.FormatInt(d.Rev, 10))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, code, doc)
	return nil
}

// writeList answers documents as a list, in the shape of the object routes' lists.
func writeList(w http.ResponseWriter, docs []store.StoredDoc) error {
	items := make([]customres.Doc, 0, len(docs))
	for _, d := range docs {
		doc, err := customres.Decode(d.Value, strconv.FormatInt(d.Rev, 10))
		if err != nil {
			return err
		}
		items = append(items, doc)
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"kind": "List", "items": items})
	return nil
}

func (s *Server) handleCRDList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	docs, err := s.store.Definitions(ctx)
	if err != nil {
		return err
	}
	return writeList(w, docs)
}

func (s *Server) handleCRDGet(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	d, err := s.store.Definition(ctx, r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusOK, d)
}

func (s *Server) handleCRDCreate(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	def, doc, err := customres.ParseDefinition(body, "")
	if err != nil {
		return customError("custom resource definition", err)
	}
	customres.Stamp(doc, "", now(), newUID())
	val, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	rev, err := s.store.CreateDefinition(ctx, def.Name, val)
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusCreated, store.StoredDoc{Name: def.Name, Value: val, Rev: rev})
}

// handleCRDUpdate replaces a definition; what its resources depend on (group, version,
// plural, kind) stays as it is.
func (s *Server) handleCRDUpdate(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	def, doc, err := customres.ParseDefinition(body, name)
	if err != nil {
		return customError("custom resource definition "+name, err)
	}
	rev, err := resourceVersionOf(r, doc)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	cur, err := s.store.Definition(ctx, name)
	if err != nil {
		return err
	}
	stored, err := customres.Decode(cur.Value, "")
	if err != nil {
		return err
	}
	if old := customres.DefinitionOf(stored); !old.Same(def) {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "custom resource definition %s: its resources are %s of kind %s; a replacement keeps the version and the kind", name, old.APIVersion(), old.Kind).
			WithDetail("spec", "the group, version, plural and kind cannot change")
	}
	customres.Carry(doc, stored)
	val, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if rev == 0 {
		rev = cur.Rev
	}
	next, err := s.store.UpdateDefinition(ctx, name, val, rev)
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusOK, store.StoredDoc{Name: name, Value: val, Rev: next})
}

func (s *Server) handleCRDDelete(w http.ResponseWriter, r *http.Request) error {
	rev, err := resourceVersionOf(r, nil)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	d, err := s.store.DeleteDefinition(ctx, r.PathValue("name"), rev)
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusOK, d)
}

// definitionOf reads the definition a resource route names; none is a 404.
func (s *Server) definitionOf(ctx context.Context, crd string) (customres.Definition, error) {
	d, err := s.store.Definition(ctx, crd)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return customres.Definition{}, httpapi.Errorf(http.StatusNotFound, "unknown kind %q: no custom resource definition of that name", crd)
		}
		return customres.Definition{}, err
	}
	doc, err := customres.Decode(d.Value, "")
	if err != nil {
		return customres.Definition{}, err
	}
	return customres.DefinitionOf(doc), nil
}

// handleCRList streams the list as objects' lists are (streamItems): a namespace holds
// up to its limits of documents of up to 64 KiB, and every namespace more.
func (s *Server) handleCRList(w http.ResponseWriter, r *http.Request, crd string) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, err := s.definitionOf(ctx, crd); err != nil {
		return err
	}
	ns := r.PathValue("ns")
	return s.streamItems(w, r, crd, ns, func(start func(int64) error, item func(any) error) error {
		return s.store.CustomResourcesEach(r.Context(), crd, ns, start, func(d store.StoredDoc) error {
			doc, err := customres.Decode(d.Value, strconv.FormatInt(d.Rev, 10))
			if err != nil {
				return err
			}
			return item(doc)
		})
	})
}

func (s *Server) handleCRGet(w http.ResponseWriter, r *http.Request, crd string) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, err := s.definitionOf(ctx, crd); err != nil {
		return err
	}
	d, err := s.store.CustomResource(ctx, crd, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusOK, d)
}

// handleCRWrite creates (name "") or replaces the resource the path names.
func (s *Server) handleCRWrite(w http.ResponseWriter, r *http.Request, crd string) error {
	ns, err := quotaNamespace(r) // a namespace objects can be in, as api/v4 names them
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	def, err := s.definitionOf(ctx, crd)
	if err != nil {
		return err
	}
	given, doc, err := def.Resource(body, ns, name)
	if err != nil {
		return customError(fmt.Sprintf("%s in namespace %s", crd, ns), err)
	}
	if name == "" {
		customres.Stamp(doc, ns, now(), newUID())
		val, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		rev, err := s.store.CreateCustomResource(ctx, crd, ns, given, val)
		if err != nil {
			return err
		}
		return writeDoc(w, http.StatusCreated, store.StoredDoc{Namespace: ns, Name: given, Value: val, Rev: rev})
	}
	rev, err := resourceVersionOf(r, doc)
	if err != nil {
		return err
	}
	d, err := s.store.UpdateCustomResource(ctx, crd, ns, name, rev, func(cur []byte) ([]byte, error) {
		stored, err := customres.Decode(cur, "")
		if err != nil {
			return nil, err
		}
		customres.Carry(doc, stored)
		doc["metadata"].(map[string]any)["namespace"] = ns
		return json.Marshal(doc)
	})
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusOK, d)
}

func (s *Server) handleCRDeleteOne(w http.ResponseWriter, r *http.Request, crd string) error {
	rev, err := resourceVersionOf(r, nil)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, err := s.definitionOf(ctx, crd); err != nil {
		return err
	}
	d, err := s.store.DeleteCustomResource(ctx, crd, r.PathValue("ns"), r.PathValue("name"), rev)
	if err != nil {
		return err
	}
	return writeDoc(w, http.StatusOK, d)
}
