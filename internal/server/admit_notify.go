package server

import (
	"fmt"
	"net/http"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// A notify sends its subscriber what happens in the namespaces it lists (docs/notify.md,
// "Who receives what"): task group failures with their messages, which quote the
// process's output. Writing a notify in one's own namespace must not be a way to read
// another's, so admitNotify asks for the rights a reader of those events would need, and
// records who subscribed for the notify controller, which checks that token's rights
// again before each delivery (a token revoked or narrowed since receives nothing more).

// notifyReadKinds are the kinds whose read right a namespace's events need: the task
// groups they are about, and the event records they follow.
var notifyReadKinds = []string{string(v4.KindTaskGroup), acl.KindEvent}

// admitNotify checks a notify's subscriptions against the writer's rights and stamps the
// writer as its subscriber; other objects pass. Every namespace of spec.namespaces but the
// notify's own needs read on task groups and events there ("*": in every namespace), and
// node.lost named in spec.events needs read on nodes: 403 naming the field otherwise.
func (s *Server) admitNotify(r *http.Request, obj v4.Object) error {
	n, ok := obj.(*v4.Notify)
	if !ok {
		return nil
	}
	id := identityOf(r)
	for i, ns := range n.Spec.Namespaces {
		if ns == n.Metadata.Namespace {
			continue // the writer may write here; what it may read is checked at delivery
		}
		for _, kind := range notifyReadKinds {
			if err := s.subscriptionAllowed(id, fmt.Sprintf("spec.namespaces[%d]", i), acl.Request{Verb: acl.VerbRead, Kind: kind, Namespace: ns}); err != nil {
				return err
			}
		}
	}
	if i := slices.Index(n.Spec.Events, v4.NotifyNodeLost); i >= 0 {
		if err := s.subscriptionAllowed(id, fmt.Sprintf("spec.events[%d]", i), acl.Request{Verb: acl.VerbRead, Kind: string(v4.KindNode)}); err != nil {
			return err
		}
	}
	if n.Metadata.Annotations == nil {
		n.Metadata.Annotations = map[string]string{}
	}
	n.Metadata.Annotations[v4.NotifySubscriberAnnotation] = subscriberOf(id) // over any value sent
	return nil
}

// subscriptionAllowed is the 403 for field when id may not do req.
func (s *Server) subscriptionAllowed(id *acl.Identity, field string, req acl.Request) error {
	if id.Allowed(req) {
		return nil
	}
	return httpapi.Errorf(http.StatusForbidden, "%s: %s may not subscribe to what it may not read: it may not %s", field, id, req).
		WithDetail(field, "needs "+req.String())
}

// subscriberOf is the NotifySubscriberAnnotation value naming id.
func subscriberOf(id *acl.Identity) string {
	if id.Anonymous() {
		return v4.NotifyAnonymous
	}
	return "berth-acl-" + id.TokenID
}
