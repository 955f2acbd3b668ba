package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
)

// Users (docs/security.md, Users and policies): every user route needs a token whose
// policies grant the route's verb on its kind and namespace (its access, authz_routes.go),
// given as a bearer token or by a user's client certificate bound to it (acl_certs.go), or,
// without either, the policy named "anonymous". Agents' routes take node certificates instead
// (httpapi.NodeAuth, for internal/agentapi's routes); /healthz, /readyz and /packages/ are open.

// aclCacheTTL is how long a token or a policy read from etcd is used before it is read
// again: a revocation or a policy change takes effect within it.
const aclCacheTTL = time.Second

type identityKey struct{}

// identityOf is who made the request (set by authorize).
func identityOf(r *http.Request) *acl.Identity {
	id, _ := r.Context().Value(identityKey{}).(*acl.Identity)
	if id == nil {
		return &acl.Identity{}
	}
	return id
}

// authorize checks perm before the handler runs: 401 without a usable token (when
// anonymous access does not allow it), 403 naming the missing right, 429 from a source
// whose failed authentications are being slowed down (authlimit.go).
func (s *Server) authorize(perm httpapi.PermFunc, next httpapi.HandlerFunc) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		// A route without a right of its own (apply, plan) decides by its body: who
		// asks is known first, so nobody without credentials makes the server read one.
		id, err := s.authenticate(w, r, perm == nil)
		if err != nil {
			return err
		}
		// A user's writes are held to their namespaces' limits (store/quota.go); the
		// controllers' and agents' are not.
		r = r.WithContext(store.WithNamespaceLimits(context.WithValue(r.Context(), identityKey{}, id)))
		r, note := withAuditNote(r)
		var req acl.Request
		if perm != nil {
			req = perm(r)
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer s.audit(r, id, req, sw, note)
		if perm != nil {
			err = s.check(id, req)
		}
		if err == nil {
			err = next(sw, r)
		}
		if err != nil {
			// Answered here, so that the audit line has the answer's status.
			s.writeError(sw, r, err)
		}
		return nil
	}
}

// check answers whether id may do req: nil, or the 401 or 403 to send.
func (s *Server) check(id *acl.Identity, req acl.Request) error {
	if id.Allowed(req) {
		return nil
	}
	if id.Anonymous() {
		return httpapi.Errorf(http.StatusUnauthorized, "401: no token, and anonymous access does not allow %s; run `berth login` or set BERTH_TOKEN (a token of `berth acl token create`)", req)
	}
	return httpapi.Errorf(http.StatusForbidden, "%s may not %s: no policy of the token grants it", id, req)
}

// credentialOf is what r offers to authenticate with: its Authorization header, or a
// browser WebSocket's bearer token (exec_ws.go) as one; "" for none.
func credentialOf(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if tok := websocketBearer(r); h == "" && tok != "" {
		h = "Bearer " + tok
	}
	return h
}

// identify reads the bearer token and its policies, else the token a user's client
// certificate stands for (acl_certs.go); neither is the anonymous identity.
func (s *Server) identify(ctx context.Context, r *http.Request) (*acl.Identity, error) {
	h := credentialOf(r)
	if h == "" {
		if token, binding, ok := pki.UserOf(httpapi.PeerCert(r.TLS)); ok {
			return s.identifyCertificate(ctx, token, binding)
		}
		anon := &acl.Identity{}
		if p, err := s.aclCache.policy(ctx, s.store, acl.AnonymousPolicy); err == nil {
			anon.Policies = []*acl.Policy{p}
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return anon, nil
	}
	scheme, raw, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: the Authorization header must be Bearer <token>")
	}
	sec, err := acl.ParseSecret(raw)
	if err != nil {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: %v", err)
	}
	t, err := s.aclCache.token(ctx, s.store, sec.ID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !t.Matches(sec)) {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: token berth-acl-%s is unknown or revoked; run `berth acl token create` for a new one", sec.ID)
	}
	if err != nil {
		return nil, err
	}
	if t.Expired(time.Now()) {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: token berth-acl-%s expired at %s", t.ID, t.Expires.Format(time.RFC3339))
	}
	return s.identityOf(ctx, t)
}

// identityOf is the identity of a valid token: its policies as they are now.
func (s *Server) identityOf(ctx context.Context, t *acl.Token) (*acl.Identity, error) {
	id := &acl.Identity{TokenID: t.ID, Name: t.Name, Management: t.Management}
	for _, name := range t.Policies {
		p, err := s.aclCache.policy(ctx, s.store, name)
		if errors.Is(err, store.ErrNotFound) {
			continue // a deleted policy grants nothing
		}
		if err != nil {
			return nil, err
		}
		id.Policies = append(id.Policies, p)
	}
	return id, nil
}

// aclCache keeps tokens and policies read from etcd for aclCacheTTL, so a request does not
// cost reads of its own. It holds at most aclCacheMax entries of each.
type aclCache struct {
	mu       sync.Mutex
	tokens   map[string]cached[*acl.Token]
	policies map[string]cached[*acl.Policy]
}

type cached[T any] struct {
	v   T
	err error
	at  time.Time
}

const aclCacheMax = 10000

func (c *aclCache) token(ctx context.Context, st *store.Store, id string) (*acl.Token, error) {
	return lookup(c, &c.tokens, id, func() (*acl.Token, error) { return st.ACLToken(ctx, id) })
}

// knows reports whether cred (an Authorization header) is a bearer token this cache
// holds and whose secret matches, without reading the store: the API's fairness gives
// such a token a queue of its own (fairness.go), and a request that must queue is no
// time for a read.
func (c *aclCache) knows(cred string) bool {
	scheme, raw, ok := strings.Cut(cred, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sec, err := acl.ParseSecret(raw)
	if err != nil {
		return false
	}
	c.mu.Lock()
	e, ok := c.tokens[sec.ID]
	c.mu.Unlock()
	return ok && e.err == nil && e.v != nil && e.v.Matches(sec)
}

func (c *aclCache) policy(ctx context.Context, st *store.Store, name string) (*acl.Policy, error) {
	return lookup(c, &c.policies, name, func() (*acl.Policy, error) { return st.ACLPolicy(ctx, name) })
}

// lookup answers from m when fresh, else reads and remembers the answer (a not-found
// too, so unknown tokens cost one read a second, not one per request).
func lookup[T any](c *aclCache, m *map[string]cached[T], key string, read func() (T, error)) (T, error) {
	c.mu.Lock()
	if e, ok := (*m)[key]; ok && time.Since(e.at) < aclCacheTTL {
		c.mu.Unlock()
		return e.v, e.err
	}
	c.mu.Unlock()
	v, err := read()
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return v, err // etcd trouble is not remembered
	}
	c.mu.Lock()
	if *m == nil || len(*m) >= aclCacheMax {
		*m = map[string]cached[T]{}
	}
	(*m)[key] = cached[T]{v: v, err: err, at: time.Now()}
	c.mu.Unlock()
	return v, err
}

// forget drops what the cache holds, after a change made through this server.
func (c *aclCache) forget() {
	c.mu.Lock()
	c.tokens, c.policies = nil, nil
	c.mu.Unlock()
}

// checkReads authorizes every document of a plan, which writes nothing: read on its
// kind in its namespace. An apply's documents pass the admission chain (admission.go).
func (s *Server) checkReads(r *http.Request, docs []v4.Document) error {
	id := identityOf(r)
	for _, d := range docs {
		m := d.Object.GetMeta()
		if err := s.check(id, acl.Request{Verb: acl.VerbRead, Kind: string(d.Object.GetKind()), Namespace: m.Namespace}); err != nil {
			return err
		}
	}
	return nil
}

// checkPrivileges refuses a workload that asks for privileges (acl.Needs) no policy of
// the request's identity grants in its namespace: one 403 naming every field and the
// privilege it needs, so that a writer learns all that is missing at once.
func (s *Server) checkPrivileges(r *http.Request, obj v4.Object) error {
	id := identityOf(r)
	kind, ns := string(obj.GetKind()), obj.GetMeta().Namespace
	var missing []acl.Need
	for _, need := range privilegeNeeds(obj) { // admit_workflow.go
		if !id.Allowed(acl.Request{Verb: acl.VerbWrite, Kind: kind, Namespace: ns, Privilege: need.Privilege}) {
			missing = append(missing, need)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var lines, privs []string
	for _, need := range missing {
		req := acl.Request{Verb: acl.VerbWrite, Kind: kind, Namespace: ns, Privilege: need.Privilege}
		lines = append(lines, fmt.Sprintf("%s: %s may not %s", need.Field, id, req))
		if !slices.Contains(privs, need.Privilege) {
			privs = append(privs, need.Privilege)
		}
	}
	grants := "no policy grants the privilege"
	if len(privs) > 1 {
		grants = "no policy grants these privileges"
	}
	e := httpapi.Errorf(http.StatusForbidden, "%s: %s (a rule's privileges: [%s])", strings.Join(lines, "; "), grants, strings.Join(privs, ", "))
	for _, need := range missing {
		e = e.WithDetail(need.Field, "needs the privilege "+need.Privilege)
	}
	return e
}

// mustIdentify reports whether r, which would send a body, comes from nobody the server
// knows: no token, and no policy named anonymous.
func mustIdentify(r *http.Request, id *acl.Identity) bool {
	hasBody := r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch
	return hasBody && id.Anonymous() && len(id.Policies) == 0
}

// authenticate identifies r's caller from the headers alone: 429 from a source whose
// failed authentications are being slowed down (authlimit.go), 401 for a token that does
// not authenticate, and, when the body decides the rights (bodyRights), 401 for a body
// from nobody the server knows (mustIdentify). A 429 sets w's Retry-After.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, bodyRights bool) (*acl.Identity, error) {
	source, credential := sourceOf(r), credentialOf(r)
	if wait, ok := s.authLimit.admit(source, credential); !ok {
		s.authFailed(source, credential, true)
		w.Header().Set("Retry-After", retryAfter(wait))
		return nil, httpapi.Errorf(http.StatusTooManyRequests, "429: too many failed authentications from %s; retry in %s (a token this address used lately is not held back)",
			source, wait.Round(time.Second))
	}
	ctx, cancel := context.WithTimeout(r.Context(), httpapi.RequestTimeout)
	id, err := s.identify(ctx, r)
	cancel()
	if err == nil && bodyRights && mustIdentify(r, id) {
		err = httpapi.Errorf(http.StatusUnauthorized, "401: no token, and a body is read only from someone the server knows; run `berth login` or set BERTH_TOKEN")
	}
	if err != nil {
		if httpapi.FromError(err).Code == http.StatusUnauthorized {
			s.authFailed(source, credential, false)
		}
		return nil, err
	}
	s.authLimit.succeeded(source, credential)
	return id, nil
}

// credentialed guards a front door that authorizes call by call inside (BCS's and
// deployd's APIs): the caller is identified from the headers before anything is read,
// as authorize does, and a request from nobody the server knows is refused at once.
func (s *Server) credentialed(next httpapi.HandlerFunc) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := s.authenticate(w, r, true); err != nil {
			return err
		}
		return next(w, r)
	}
}
