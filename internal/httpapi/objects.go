package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// ListBody is the answer of a list of objects.
type ListBody = v4.List[v4.Object]

// Validate is the 422 listing every field of obj at fault (v4.Validate), or nil.
func Validate(obj v4.Object) error {
	return InvalidObject(obj, v4.Validate(obj))
}

// InvalidObject is the 422 listing every field of obj at fault, or nil without any.
func InvalidObject(obj v4.Object, fe v4.FieldErrors) error {
	if len(fe) == 0 {
		return nil
	}
	m := obj.GetMeta()
	subject := fmt.Sprintf("%s %s", obj.GetKind(), m.Name)
	if m.Namespace != "" {
		subject = fmt.Sprintf("%s %s/%s", obj.GetKind(), m.Namespace, m.Name)
	}
	ae := Errorf(http.StatusUnprocessableEntity, "%s", InvalidMessage(subject, fe))
	ae.Details = fe
	return ae
}

// Update validates obj (Validate) and writes it with its resourceVersion as the
// precondition, keeping the definition the user sent: how an object the server changes
// on someone's behalf (a scale, a drain, a node an agent updates) reaches etcd, so that
// nothing is stored that an apply would refuse.
func Update(ctx context.Context, st *store.Store, obj v4.Object) error {
	if err := Validate(obj); err != nil {
		return err
	}
	return st.Update(ctx, obj, store.Raw{})
}

// InvalidMessage is the message of a 422: subject's one problem, or how many it has.
func InvalidMessage(subject string, fe v4.FieldErrors) string {
	if len(fe) == 1 {
		return subject + " is invalid: " + fe[0].Error()
	}
	return fmt.Sprintf("%s is invalid: %d problems", subject, len(fe))
}

// Record writes an event about obj ("process ns-a/web created"). A failure is logged
// by the store and never fails the request: the object change itself has succeeded.
func Record(st *store.Store, obj v4.Object, reason, verb string) {
	m := obj.GetMeta()
	ref := m.Name // cluster-scoped objects (nodes) have no namespace
	if m.Namespace != "" {
		ref = m.Namespace + "/" + m.Name
	}
	rec := v4.Event{
		Type:      v4.EventNormal,
		Reason:    reason,
		Kind:      obj.GetKind(),
		Namespace: m.Namespace,
		Name:      m.Name,
		Message:   fmt.Sprintf("%s %s %s", obj.GetKind(), ref, verb),
	}
	st.QueueEvent(rec) // recorded a moment later, with others: the request does not wait
}

// Nodes are not documents users apply (v4.Parse refuses them): agents send their node as
// plain JSON. Decoding is strict like the spec decoder: unknown fields and wrong types are
// field errors (422), a body that is not JSON is a 400.

// DecodeNode decodes, defaults and validates a node. subject names it in messages. A
// body of the wrong kind is a 400 (the wrong path), other field problems are 422.
func DecodeNode(data []byte, subject string) (*v4.Node, error) {
	n, err := v4.DecodeNode(data)
	if err == nil {
		return n, nil
	}
	fe, ok := errors.AsType[v4.FieldErrors](err)
	if !ok {
		return nil, Errorf(http.StatusBadRequest, "the body is not a JSON node: %v", err)
	}
	status := http.StatusUnprocessableEntity
	if slices.ContainsFunc(fe, func(e v4.FieldError) bool { return e.Field == "kind" }) {
		status = http.StatusBadRequest
	}
	ae := Errorf(status, "%s", InvalidMessage(subject, fe))
	ae.Details = fe
	return nil, ae
}

// NodeError gives the store's not-found and exists errors a message that names the node
// (the store's own reads "get node /NAME").
func NodeError(name string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Errorf(http.StatusNotFound, "node %s not found", name)
	case errors.Is(err, store.ErrAlreadyExists):
		return Errorf(http.StatusConflict, "node %s is already registered", name)
	}
	return err
}

// ReadNode reads the body and decodes it as a node (DecodeNode); body is what was read,
// the node's definition.
func (b Bodies) ReadNode(w http.ResponseWriter, r *http.Request, subject string) (n *v4.Node, body []byte, err error) {
	if body, err = b.Read(w, r); err != nil {
		return nil, nil, err
	}
	if n, err = DecodeNode(body, subject); err != nil {
		return nil, nil, err
	}
	return n, body, nil
}
