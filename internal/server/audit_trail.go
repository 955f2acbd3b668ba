package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/audit"
)

// The audit log (docs/security.md, Audit log) names the kind, namespace and name of the
// object of every write. A route's path does not always say them: a create's name and an
// apply's objects are in the body, which only the handler reads. So authorize gives each
// request an auditNote the handler fills in, and the line is written from it once the
// handler is done: one line per object an apply wrote (or was refused).

type auditNoteKey struct{}

// auditNote is what a handler learned of the objects its request is about.
type auditNote struct {
	mu      sync.Mutex
	objects []auditObject
}

type auditObject struct{ verb, kind, namespace, name string }

// withAuditNote gives r a note for its handler to fill in.
func withAuditNote(r *http.Request) (*http.Request, *auditNote) {
	n := &auditNote{}
	return r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, n)), n
}

// noteObjects records the objects a request is about (verb on each), for its audit lines.
func noteObjects(r *http.Request, verb string, objs ...v4.Object) {
	n, _ := r.Context().Value(auditNoteKey{}).(*auditNote)
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range objs {
		m := o.GetMeta()
		n.objects = append(n.objects, auditObject{verb: verb, kind: string(o.GetKind()), namespace: m.Namespace, name: m.Name})
	}
}

// noteDocuments is noteObjects for the documents of an apply or a plan.
func noteDocuments(r *http.Request, verb string, docs []v4.Document) {
	objs := make([]v4.Object, len(docs))
	for i, d := range docs {
		objs[i] = d.Object
	}
	noteObjects(r, verb, objs...)
}

func (n *auditNote) taken() []auditObject {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.objects
}

// viaKey carries the request of another front door (compat.go) to the /v1 calls it makes.
type viaKey struct{}

// withVia marks the /v1 calls h makes with the request that made them, so their audit
// lines say which BCS or deployd call wrote what.
func withVia(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viaKey{}, r.Method+" "+r.URL.Path)))
	})
}

// audit records writes, exec sessions, log reads and secret reads, allowed or refused
// (docs/security.md, Audit log): one line, or one per object the handler noted.
func (s *Server) audit(r *http.Request, id *acl.Identity, req acl.Request, sw *statusWriter, note *auditNote) {
	if s.auditLog == nil {
		return
	}
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	if !write && req.Verb != acl.VerbExec && req.Verb != acl.VerbLogs && req.Kind != string(v4.KindSecret) {
		return
	}
	verb := req.Verb
	if verb == "" {
		verb = acl.VerbWrite // apply, plan, whoami, can-i: the documents say the rest
		if !write {
			verb = acl.VerbRead
		}
	}
	e := audit.Entry{Time: time.Now().UTC(), Who: id.String(), Verb: verb, Kind: req.Kind, Namespace: req.Namespace,
		Name: r.PathValue("name"), Method: r.Method, Path: r.URL.Path, Status: sw.code, Remote: r.RemoteAddr}
	e.Via, _ = r.Context().Value(viaKey{}).(string)
	if req.Verb == acl.VerbExec {
		e.Command = r.URL.Query()["cmd"] // argv as the agent runs it (reload and restart actions have none)
	}
	entries := []audit.Entry{e}
	if objs := note.taken(); len(objs) > 0 {
		entries = entries[:0]
		for _, o := range objs {
			oe := e
			oe.Verb, oe.Kind, oe.Namespace, oe.Name = o.verb, o.kind, o.namespace, o.name
			entries = append(entries, oe)
		}
	}
	for _, e := range entries {
		if err := s.auditLog.Record(e); err != nil {
			s.log.Error("audit record lost", "err", err, "who", e.Who, "path", e.Path)
		}
	}
}

// authFailed counts a failed authentication from source: its bucket (authlimit.go) and
// the audit log's sum for the minute. tokenID is the token the request claimed, if any.
func (s *Server) authFailed(source, credential string, throttled bool) {
	if !throttled && credential != "" {
		// Only a token can be guessed: requests without one are not held back
		// (authlimit.go), nor do they use up the source's allowance.
		s.authLimit.failed(source)
	}
	if s.auditLog == nil {
		return
	}
	var tokenID string
	_, raw, _ := strings.Cut(credential, " ") // "Bearer <token>"
	if sec, err := acl.ParseSecret(raw); err == nil {
		tokenID = "berth-acl-" + sec.ID
	}
	s.auditLog.AuthFailure(source, tokenID, throttled, time.Now())
}
