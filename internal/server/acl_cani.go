package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// maxCanIChecks bounds the questions of one can-i: a page of the web console asks about
// every control it may show (a dozen or two) at once; a thousand would only be a way to
// make the server work.
const maxCanIChecks = 100

// canIBody is the body of POST /v1/acl/can-i: one question (verb, kind, namespace), or
// several (checks), answered in the same order.
type canIBody struct {
	v4.CanI
	Checks []v4.CanI `json:"checks"`
}

// handleCanI answers whether the caller's token may do each thing asked: the token's own
// rights only, so any user may ask.
func (s *Server) handleCanI(w http.ResponseWriter, r *http.Request) error {
	var body canIBody
	if err := s.bodyReader.Decode(w, r, &body); err != nil {
		return err
	}
	id := identityOf(r)
	if body.Checks == nil {
		if err := canIValid(&body.CanI, ""); err != nil {
			return err
		}
		answer(id, &body.CanI)
		httpapi.WriteJSON(w, http.StatusOK, body.CanI)
		return nil
	}
	if body.Verb != "" || body.Kind != "" || body.Namespace != "" {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "ask one question (verb, kind) or several (checks), not both").
			WithDetail("checks", "not with verb, kind or namespace")
	}
	if len(body.Checks) == 0 || len(body.Checks) > maxCanIChecks {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "checks holds %d questions: ask 1 to %d at once", len(body.Checks), maxCanIChecks).
			WithDetail("checks", fmt.Sprintf("1 to %d questions", maxCanIChecks))
	}
	for i := range body.Checks {
		if err := canIValid(&body.Checks[i], fmt.Sprintf("checks[%d].", i)); err != nil {
			return err
		}
		answer(id, &body.Checks[i])
	}
	httpapi.WriteJSON(w, http.StatusOK, v4.CanIList{Checks: body.Checks})
	return nil
}

// canIValid checks one question; field prefixes the names of its fields in the error.
func canIValid(q *v4.CanI, field string) error {
	if !slices.Contains(acl.Verbs, q.Verb) {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%sverb %q: use one of %v", field, q.Verb, acl.Verbs).WithDetail(field+"verb", "unknown")
	}
	if q.Kind == "" {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%skind is required", field).WithDetail(field+"kind", "required")
	}
	if len(q.Kind) > maxFilterLen || len(q.Namespace) > maxFilterLen || strings.Contains(q.Namespace, "/") {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%skind or namespace is not a name", field).WithDetail(field+"namespace", "not a name")
	}
	return nil
}

// answer fills q.Allowed: a cluster-wide kind has no namespace, and a namespaced one
// without a namespace is asked about every namespace.
func answer(id *acl.Identity, q *v4.CanI) {
	if acl.ClusterKind(q.Kind) {
		q.Namespace = ""
	} else if q.Namespace == "" {
		q.Namespace = "*"
	}
	q.Allowed = id.Allowed(acl.Request{Verb: q.Verb, Kind: q.Kind, Namespace: q.Namespace})
}
