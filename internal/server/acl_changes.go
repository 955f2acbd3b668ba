package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// A client that shows what its token may do (the web console hides the controls it may
// not use) learns that a token or a policy changed from `GET /v1/acl/whoami?watch=true`
// (docs/security.md, "What a token may do"): the server follows etcd's ACL keys with one
// watch, whichever server of the cluster took the change, and wakes every such stream.

// aclChanges is a broadcast: next returns a channel that is closed at the next change.
// The zero value is ready.
type aclChanges struct {
	mu sync.Mutex
	ch chan struct{}
}

func (c *aclChanges) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *aclChanges) broadcast() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// aclRewatchPause is how long followACL waits before watching again after etcd's watch
// ended.
const aclRewatchPause = time.Second

// followACL watches the tokens and policies in etcd until ctx ends. A change also drops
// the server's ACL cache, so a revocation through another server takes effect here at
// once rather than within the cache's second.
func (s *Server) followACL(ctx context.Context) {
	for first := true; ; first = false {
		changes := s.store.WatchACL(ctx)
		if !first {
			// The last watch ended (etcd lost its leader, a compaction): what changed
			// while none ran is unknown, so everyone asks again.
			s.aclChanged()
		}
		for range changes {
			s.aclChanged()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(aclRewatchPause):
		}
	}
}

func (s *Server) aclChanged() {
	s.aclCache.forget()
	s.aclChanges.broadcast()
}

func whoamiOf(id *acl.Identity) v4.Whoami {
	out := v4.Whoami{Name: id.Name, Anonymous: id.Anonymous(), Management: id.Management, Policies: []string{}}
	if !id.Anonymous() {
		out.Token = "berth-acl-" + id.TokenID
	}
	for _, p := range id.Policies {
		out.Policies = append(out.Policies, p.Metadata.Name)
	}
	return out
}

// watchWhoami streams the caller's whoami as NDJSON: at once, then again after each
// change of a token or a policy (of any: the line may read as the one before). It ends
// when the token no longer authenticates (revoked, expired), so the client learns that
// from its next request. Anonymous callers may not watch: the stream is for a console's
// signed-in users and should not be a free connection to hold.
func (s *Server) watchWhoami(w http.ResponseWriter, r *http.Request) error {
	id := identityOf(r)
	if id.Anonymous() {
		return httpapi.Errorf(http.StatusUnauthorized, "401: watch: only a token's rights can be watched; send Authorization: Bearer <token>")
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	lines := make(chan v4.Whoami)
	go func() { // ends with ctx, which ends when Stream returns
		defer close(lines)
		for {
			changed := s.aclChanges.next()
			select {
			case lines <- whoamiOf(id):
			case <-ctx.Done():
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
			var err error
			if id, err = s.identify(ctx, r); err != nil || id.Anonymous() {
				return
			}
		}
	}()
	httpapi.Stream(ctx, w, lines, func(v v4.Whoami) any { return v })
	return nil
}
