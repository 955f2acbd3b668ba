package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/store"
)

// A notify delivers only what its subscriber may read when it is sent (docs/notify.md,
// "Who receives what"). The server records the writer's token on the notify
// (v4.NotifySubscriberAnnotation) after checking its subscriptions; the rights are
// checked again here, through the same ACL, before every attempt: a token revoked,
// expired or narrowed since the notify was written receives nothing it may no longer
// read. A task group event needs read on task groups and events in its namespace, a node
// event read on nodes.

// Why a message is dropped unsent (the reason label of berth_notify_dropped_total).
const (
	// dropNoSubscriber: the notify names no token that exists and works (none recorded,
	// as by a berth before it recorded them; revoked; expired).
	dropNoSubscriber = "no-subscriber"
	// dropForbidden: the token may not read what the message is about.
	dropForbidden = "forbidden"
	// dropUnchecked: the token's rights could not be read (etcd did not answer).
	dropUnchecked = "unchecked"
)

// subscriberTTL is how long a subscriber's token and policies are used before they are
// read again, as the API server keeps them (authz.go's aclCacheTTL).
const subscriberTTL = time.Second

// subscribers resolves notifies' subscribers to their rights, from the store.
type subscribers struct {
	store *store.Store
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]subscriberEntry // by annotation value
}

type subscriberEntry struct {
	id  *acl.Identity // nil: no working token (why says what)
	why string
	at  time.Time
}

// identity is the subscriber's identity, or nil and why there is none. An error is etcd
// trouble: the caller tries again later.
func (s *subscribers) identity(ctx context.Context, subscriber string) (*acl.Identity, string, error) {
	now := s.now()
	s.mu.Lock()
	if e, ok := s.cache[subscriber]; ok && now.Sub(e.at) < subscriberTTL {
		s.mu.Unlock()
		return e.id, e.why, nil
	}
	s.mu.Unlock()
	id, why, err := s.read(ctx, subscriber, now)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	if s.cache == nil || len(s.cache) >= 10000 {
		s.cache = map[string]subscriberEntry{}
	}
	s.cache[subscriber] = subscriberEntry{id: id, why: why, at: now}
	s.mu.Unlock()
	return id, why, nil
}

// read builds the subscriber's identity from its token and policies, as the API server
// does for a request (authz.go's identify).
func (s *subscribers) read(ctx context.Context, subscriber string, now time.Time) (*acl.Identity, string, error) {
	if subscriber == v4.NotifyAnonymous {
		id := &acl.Identity{}
		p, err := s.store.ACLPolicy(ctx, acl.AnonymousPolicy)
		switch {
		case err == nil:
			id.Policies = []*acl.Policy{p}
		case !errors.Is(err, store.ErrNotFound):
			return nil, "", fmt.Errorf("read the anonymous policy: %w", err)
		}
		return id, "", nil
	}
	tokenID, ok := strings.CutPrefix(subscriber, "berth-acl-")
	if !ok || acl.ValidID(tokenID) != nil {
		return nil, "it names no subscriber (written before berth recorded them): apply it again", nil
	}
	t, err := s.store.ACLToken(ctx, tokenID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "its subscriber, token " + subscriber + ", is revoked: apply it again with a token", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read token %s: %w", subscriber, err)
	}
	if t.Expired(now) {
		return nil, "its subscriber, token " + subscriber + ", expired: apply it again with a token", nil
	}
	id := &acl.Identity{TokenID: t.ID, Name: t.Name, Management: t.Management}
	for _, name := range t.Policies {
		p, err := s.store.ACLPolicy(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			continue // a deleted policy grants nothing
		}
		if err != nil {
			return nil, "", fmt.Errorf("read policy %s of token %s: %w", name, subscriber, err)
		}
		id.Policies = append(id.Policies, p)
	}
	return id, "", nil
}

// mayReceive says whether notify n's subscriber may read what m is about: "" when it may,
// else the drop reason and why (for the operator's log: it may name what the subscriber
// may not read).
func (s *subscribers) mayReceive(ctx context.Context, n *v4.Notify, m v4.NotifyMessage) (reason, why string, err error) {
	subscriber := n.Metadata.Annotations[v4.NotifySubscriberAnnotation]
	id, why, err := s.identity(ctx, subscriber)
	if err != nil || id == nil {
		return dropNoSubscriber, why, err
	}
	for _, req := range readsFor(m) {
		if !id.Allowed(req) {
			return dropForbidden, fmt.Sprintf("%s may not %s", id, req), nil
		}
	}
	return "", "", nil
}

// readsFor are the rights a reader of m's event needs.
func readsFor(m v4.NotifyMessage) []acl.Request {
	if m.Namespace == "" { // node.lost
		return []acl.Request{{Verb: acl.VerbRead, Kind: string(v4.KindNode)}}
	}
	return []acl.Request{
		{Verb: acl.VerbRead, Kind: string(v4.KindTaskGroup), Namespace: m.Namespace},
		{Verb: acl.VerbRead, Kind: acl.KindEvent, Namespace: m.Namespace},
	}
}
