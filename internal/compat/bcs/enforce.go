package bcs

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// deleteConfig deletes a configmap or a secret. /v1 refuses one that workloads name
// (their next start would fail) unless forced; BCS deleted it whatever used it, and
// bcs-client's `--enforce 1` (?enforce=1) is BCS's way to say so. With enforce, berth
// deletes it as BCS did and warns, naming the workloads left without it; without, the
// refusal names enforce, the way a BCS client has to force it.
func (h *Handler) deleteConfig(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		enforce := false
		if v := r.URL.Query().Get("enforce"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				writeFailure(w, failure{code: CodeDriverParameter,
					message: fmt.Sprintf("query parameter enforce=%q: want 1 or 0 (true or false)", v)})
				return
			}
			enforce = b
		}
		path := v1call.Path("namespaces", r.PathValue("ns"), plural, r.PathValue("name"))
		a := h.v1.Call(r, http.MethodDelete, path, nil, nil)
		if a.Status != http.StatusConflict {
			h.finish(w, a, false, nil)
			return
		}
		subject, users, ok := usersOf(a.Message())
		if !ok { // a conflict of another kind: /v1's answer as it is
			h.finish(w, a, false, nil)
			return
		}
		if !enforce {
			writeFailure(w, failure{code: CodeScheduler, message: fmt.Sprintf(
				"%s is used by %s: change them first, or delete with enforce=1 (bcs-client delete --enforce 1) to leave them without it", subject, users)})
			return
		}
		a = h.v1.Call(r, http.MethodDelete, path, map[string][]string{"force": {"true"}}, nil)
		warning := v1call.Warning(fmt.Sprintf("enforce: %s was deleted while %s named it: their instances fail at their next start until it is created again or they stop naming it", subject, users))
		h.finish(w, a, false, []string{warning})
	}
}

// usersOf reads /v1's refusal of a configmap or a secret in use ("KIND NS/NAME is used
// by USERS: ...") into the object and its users.
func usersOf(msg string) (subject, users string, ok bool) {
	subject, rest, ok := strings.Cut(msg, " is used by ")
	if !ok {
		return "", "", false
	}
	users, _, ok = strings.Cut(rest, ": ")
	return subject, users, ok
}
