package agentapi

import (
	"context"
	"errors"
	"net/http"
	"reflect"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// nodeList is a list an agent keeps in its node's status (busy ports, CSI plugins) and
// sends whole, in a body of type B, when it changed.
type nodeList[B, T any] struct {
	what     string                    // the list in errors: "busy ports"
	items    func(*B) []T              // the list in the body
	validate func([]T) v4.FieldErrors  // checks it field by field: an agent is input
	field    func(*v4.NodeStatus) *[]T // where the node's status keeps it
}

// put serves the PUT of the list to the node named in the path: decode, validate, write
// it unless the node holds the same list already (an unchanged list moves no revision).
func (l nodeList[B, T]) put(a *API, w http.ResponseWriter, r *http.Request) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var b B
	if err := httpapi.DecodeStrict(body, &b); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a list of %s: %v", l.what, err)
	}
	items := l.items(&b)
	if errs := l.validate(items); len(errs) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "the %s are invalid: %v", l.what, errs)
		ae.Details = errs
		return ae
	}
	if len(items) == 0 {
		items = nil // as a node without any is stored
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	err = a.updateNode(ctx, r.PathValue("name"), "while its "+l.what+" were written; try again", func(n *v4.Node) bool {
		cur := l.field(&n.Status)
		if (len(*cur) == 0 && items == nil) || reflect.DeepEqual(*cur, items) {
			return false
		}
		*cur = items
		return true
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// updateNode reads node name, lets change modify it and writes it back, with its
// revision as the precondition: a write that lost a race with another writer is made
// again on what that one wrote, agentWriteAttempts times at most. change reports
// whether it changed anything; nothing is written when it did not. during ends the error
// of a node that kept changing ("during the heartbeat").
func (a *API) updateNode(ctx context.Context, name, during string, change func(*v4.Node) bool) error {
	for range agentWriteAttempts {
		n, err := a.nodes().Get(ctx, "", name)
		if err != nil {
			return httpapi.NodeError(name, err)
		}
		if !change(n) {
			return nil
		}
		err = a.update(ctx, n)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return httpapi.NodeError(name, err)
		}
		return nil
	}
	return httpapi.Errorf(http.StatusConflict, "node %s changed %d times %s", name, agentWriteAttempts, during)
}
