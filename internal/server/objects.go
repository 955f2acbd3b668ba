package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/redact"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/tracing"
)

// kindOf resolves the {plural} path value; an unknown kind is a 404 (no such collection),
// and so are cluster-scoped kinds, which have their own routes (/v1/nodes).
func kindOf(r *http.Request) (v4.Kind, error) {
	p := r.PathValue("plural")
	k, err := v4.ParseKind(p)
	if err != nil {
		return "", httpapi.Errorf(http.StatusNotFound, "unknown kind %q", p)
	}
	if !k.Namespaced() {
		return "", httpapi.Errorf(http.StatusNotFound, "%s are not namespaced: use /v1/%s", k.Plural(), k.Plural())
	}
	return k, nil
}

// writableKindOf is kindOf for writes: system kinds (task groups) are written by berth's
// scheduler and controllers, never through the API, so writes get 405 (Allow: GET).
func writableKindOf(w http.ResponseWriter, r *http.Request) (v4.Kind, error) {
	k, err := kindOf(r)
	if err != nil {
		return "", err
	}
	if k.System() {
		w.Header().Set("Allow", http.MethodGet)
		return "", httpapi.Errorf(http.StatusMethodNotAllowed,
			"%s are written by berth itself (the scheduler and controllers): they can be read, not %s", k.Plural(), verbOf(r.Method))
	}
	return k, nil
}

func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "created"
	case http.MethodPut:
		return "replaced"
	case http.MethodDelete:
		return "deleted"
	}
	return "changed"
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) error {
	if crd, ok := customPlural(r); ok {
		return s.handleCRList(w, r, crd)
	}
	if p := r.PathValue("plural"); (p == "apply" || p == "plan") && r.PathValue("ns") == "" {
		w.Header().Set("Allow", http.MethodPost)
		return httpapi.Errorf(http.StatusMethodNotAllowed, "use POST for /v1/%s", p)
	}
	kind, err := kindOf(r)
	if err != nil {
		return err
	}
	ns := r.PathValue("ns") // "" on /v1/{plural}: all namespaces
	q := r.URL.Query()
	watch, err := httpapi.BoolParam(q.Get("watch"), "watch")
	if err != nil {
		return err
	}
	if watch {
		return s.watchObjects(w, r, kind, ns)
	}
	if paged(r) {
		return s.listPage(w, r, kind, ns)
	}
	return s.streamList(w, r, kind, ns)
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) error {
	if crd, ok := customPlural(r); ok {
		return s.handleCRGet(w, r, crd)
	}
	kind, err := kindOf(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, err := s.store.Get(ctx, kind, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, obj)
	return nil
}

func (s *Server) handleDefinition(w http.ResponseWriter, r *http.Request) error {
	kind, err := kindOf(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	raw, err := s.store.GetRaw(ctx, kind, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	if kind != v4.KindSecret { // a secret's values are its readers' to read
		// A workload may carry an image pull password or a package's password written
		// out: whoever may read the workload sees them masked, as BCS showed them.
		raw.Data = redact.Document(raw.Data)
	}
	w.Header().Set("Content-Type", raw.ContentType)
	w.WriteHeader(http.StatusOK)
	w.Write(raw.Data)
	return nil
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) error {
	if crd, ok := customPlural(r); ok {
		return s.handleCRWrite(w, r, crd)
	}
	return s.writeOne(w, r, opCreate, s.store.Create, "Created", http.StatusCreated)
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) error {
	if crd, ok := customPlural(r); ok {
		return s.handleCRWrite(w, r, crd)
	}
	return s.writeOne(w, r, opUpdate, s.store.Update, "Updated", http.StatusOK)
}

// writeOne reads one document addressed by the path (a create's names no object), admits
// it, writes it with write, records the event reason and answers with the stored object.
func (s *Server) writeOne(w http.ResponseWriter, r *http.Request, op admitOp,
	write func(context.Context, v4.Object, store.Raw) error, reason string, status int) error {
	kind, err := writableKindOf(w, r)
	if err != nil {
		return err
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	doc, err := s.readOne(w, r, kind, ns, name)
	if err != nil {
		return err
	}
	noteObjects(r, acl.VerbWrite, doc.Object) // the audit line names a create's object
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	a := s.newAdmission(r, op, []v4.Document{doc})
	defer a.done() // after the write: the namespace's quota lock (admit_quota.go)
	if err := a.admit(ctx, targetOf(doc.Object)); err != nil {
		return err
	}
	doc = a.docs[0] // as the admission webhooks left it
	var rollout *v4.Operation
	if op == opUpdate {
		if rollout, err = s.beginRollout(ctx, doc.Object); err != nil {
			return err
		}
	}
	tracing.Stamp(ctx, doc.Object.GetMeta(), time.Now()) // the controllers go on with this request's trace
	// Judged again when another server wrote the namespace meanwhile (admit_quota_fence.go).
	err = a.fencedWrite(ctx, func(ctx context.Context) error { return write(ctx, doc.Object, rawOf(doc)) })
	if err != nil {
		if rollout != nil {
			_ = s.store.EndOperation(context.WithoutCancel(ctx), v4.KindDeployment, ns, name, v4.OpRollout)
		}
		return err
	}
	s.record(doc.Object, reason, strings.ToLower(reason))
	if rollout != nil {
		writeAccepted(w, doc.Object, rollout) // the rollout goes on in the background
		return nil
	}
	httpapi.WriteJSON(w, status, doc.Object)
	return nil
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) error {
	if crd, ok := customPlural(r); ok {
		return s.handleCRDeleteOne(w, r, crd)
	}
	kind, err := writableKindOf(w, r)
	if err != nil {
		return err
	}
	rv, err := deleteVersion(r)
	if err != nil {
		return err
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.newAdmission(r, opDelete, nil).admit(ctx, target{kind: kind, ns: ns, name: name}); err != nil {
		return err
	}
	if kind == v4.KindVolume { // its storage goes first (volume_delete.go)
		return s.deleteVolume(ctx, w, ns, name, rv)
	}
	obj, err := s.store.Delete(ctx, kind, ns, name, rv)
	if err != nil {
		return err
	}
	s.record(obj, "Deleted", "deleted")
	httpapi.WriteJSON(w, http.StatusOK, obj)
	return nil
}

// deleteVersion is a delete's ?resourceVersion= precondition ("" for none): a positive
// integer, 400 otherwise.
func deleteVersion(r *http.Request) (string, error) {
	rv := r.URL.Query().Get("resourceVersion")
	if rv != "" {
		if n, err := strconv.ParseInt(rv, 10, 64); err != nil || n <= 0 {
			return "", httpapi.Errorf(http.StatusBadRequest, "resourceVersion %q is not a positive integer", rv)
		}
	}
	return rv, nil
}

// readOne reads and parses a body holding exactly one document, and checks it against the
// path: its kind, its namespace and, for name != "", its name.
func (s *Server) readOne(w http.ResponseWriter, r *http.Request, kind v4.Kind, ns, name string) (v4.Document, error) {
	subject := fmt.Sprintf("%s %s/%s", kind, ns, name)
	if name == "" {
		subject = fmt.Sprintf("the %s for namespace %s", kind, ns)
	}
	docs, err := s.readDocuments(w, r, subject)
	if err != nil {
		return v4.Document{}, err
	}
	if len(docs) != 1 {
		return v4.Document{}, httpapi.Errorf(http.StatusBadRequest, "the body must hold exactly one document, it has %d (use /v1/apply for several)", len(docs))
	}
	doc := docs[0]
	meta := doc.Object.GetMeta()
	switch {
	case doc.Object.GetKind() != kind:
		return doc, httpapi.Errorf(http.StatusBadRequest, "the document is a %s, the path is for %s", doc.Object.GetKind(), kind.Plural()).
			WithDetail("kind", fmt.Sprintf("must be %s", kind))
	case meta.Namespace != ns:
		return doc, httpapi.Errorf(http.StatusBadRequest, "the document is in namespace %q, the path in %q", meta.Namespace, ns).
			WithDetail("metadata.namespace", fmt.Sprintf("must be %s", ns))
	case name != "" && meta.Name != name:
		return doc, httpapi.Errorf(http.StatusBadRequest, "the document is named %q, the path %q", meta.Name, name).
			WithDetail("metadata.name", fmt.Sprintf("must be %s", name))
	}
	return doc, nil
}

// readDocuments reads the body (at most maxBody bytes) and parses it with
// v4.ParseValidated in the mode of the request's ?validate= (validation): FieldErrors
// give 422 with every problem, any other failure (not JSON or YAML) 400. subject names
// what the body is for in the 422 message ("process ns-a/web").
func (s *Server) readDocuments(w http.ResponseWriter, r *http.Request, subject string) ([]v4.Document, error) {
	mode, err := validation(r)
	if err != nil {
		return nil, err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	docs, err := v4.ParseValidated(body, mode)
	if len(docs) == 1 && err == nil {
		// A single document's definition is the body itself, byte for byte (the parser
		// trims the blanks around each document of a stream).
		docs[0].Raw = body
	}
	if err != nil {
		if fe, ok := errors.AsType[v4.FieldErrors](err); ok {
			ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage(subject, fe))
			ae.Details = fe
			return nil, ae
		}
		return nil, httpapi.Errorf(http.StatusBadRequest, "unreadable body: %v", err)
	}
	if len(docs) == 0 {
		return nil, httpapi.Errorf(http.StatusBadRequest, "the body holds no document")
	}
	for _, d := range docs {
		for _, warning := range d.Warnings {
			w.Header().Add("Warning", warningHeader(warning))
		}
	}
	return docs, nil
}

// validation is the request's ?validate=: "warn" (the default) accepts what BCS's decoder
// accepted, each key dropped or value resolved with a Warning header; "strict" refuses
// them (docs/api.md). It only ever makes decoding stricter, so it needs no permission.
func validation(r *http.Request) (v4.Validation, error) {
	mode, err := v4.ParseValidation(r.URL.Query().Get("validate"))
	if err != nil {
		return mode, httpapi.Errorf(http.StatusBadRequest, "query parameter %v", err).WithDetail("validate", `must be "strict" or "warn"`)
	}
	return mode, nil
}

// warningHeader is a Warning header value (RFC 9111 syntax, code 299 "miscellaneous
// persistent warning", as Kubernetes sends them): the text quoted in ASCII, since the
// field path may hold any key the user wrote.
func warningHeader(w v4.Warning) string {
	return "299 berth " + strconv.QuoteToASCII(w.String())
}

func rawOf(doc v4.Document) store.Raw {
	return store.Raw{ContentType: store.ContentTypeOf(doc.Raw), Data: doc.Raw}
}
