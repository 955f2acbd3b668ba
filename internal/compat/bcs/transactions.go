package bcs

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS's scheduler ran every change of an application (launch, scale, update, delete,
// reschedule) as a persisted transaction that a stuck change could be inspected and
// aborted by (`bcs-client trans -l`, `trans -d`). berth keeps no such records: a change is
// the object's new spec, which the controllers reconcile until it holds, and what is in
// progress is on the objects themselves (a deployment's rollout in its status, an
// application's instances in theirs, refusals as events; docs/operations.md). Mapping
// those onto transactions would invent IDs nothing else knows and a delete that aborts
// nothing, so the list is always empty and a delete finds nothing, with BCS's answer for
// a transaction its store does not hold.

func (h *Handler) transactionRoutes() {
	h.mux.HandleFunc("GET /transactions", h.listTransactions)
	h.mux.HandleFunc("GET /transactions/{ns}", h.listTransactions)
	h.mux.HandleFunc("DELETE /transactions/{ns}/{name}", h.deleteTransaction)
}

// transactionsWarning says where berth's changes in progress are.
const transactionsWarning = "berth keeps no transactions: a change in progress is on its object " +
	"(a deployment's rollout in its status, instances and refusals in their statuses and events)"

// mayReadApplications checks that the caller may read applications in ns (every namespace
// when ns is empty), the objects BCS's transactions were about: the same 403 /v1 answers,
// so a token limited to a namespace learns nothing of another.
func (h *Handler) mayReadApplications(r *http.Request, ns string) *failure {
	path := v1call.Path("applications")
	if ns != "" {
		path = v1call.Path("namespaces", ns, "applications")
	}
	a := h.v1.Call(r, http.MethodGet, path, url.Values{"limit": {"1"}}, nil)
	if a.OK() {
		return nil
	}
	f := failureOf(a, false)
	return &f
}

// listTransactions serves GET /transactions/{ns}?objKind=&objName=. bcs-client sends its
// --objkind as the path's namespace (and no namespace at all without it), so the path
// may name no namespace: the list is then the cluster's, and needs its read.
func (h *Handler) listTransactions(w http.ResponseWriter, r *http.Request) {
	if f := h.mayReadApplications(r, r.PathValue("ns")); f != nil {
		writeFailure(w, *f)
		return
	}
	writeSuccess(w, []struct{}{}, []string{v1call.Warning(transactionsWarning)})
}

// deleteTransaction serves DELETE /transactions/{ns}/{name}: there is none to delete, and
// BCS's scheduler answered a delete its store failed with its common error code.
func (h *Handler) deleteTransaction(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if f := h.mayReadApplications(r, ns); f != nil {
		writeFailure(w, *f)
		return
	}
	writeFailure(w, failure{code: CodeScheduler,
		message: fmt.Sprintf("no transaction %s/%s: %s", ns, name, transactionsWarning)})
}
