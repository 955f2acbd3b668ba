package bcs

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
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
		refs := a.UsedBy()
		if len(refs) == 0 { // a conflict of another kind: /v1's answer as it is
			h.finish(w, a, false, nil)
			return
		}
		subject := fmt.Sprintf("%s %s/%s", strings.TrimSuffix(plural, "s"), r.PathValue("ns"), r.PathValue("name"))
		users := usersOf(refs)
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

// usersOf names the users that /v1's refusal lists in its usedBy ("process ns/web,
// application ns/api"); /v1 lists the first v4.MaxUsedBy of them.
func usersOf(refs []v4.ObjectRef) string {
	names := make([]string, len(refs))
	for i, u := range refs {
		names[i] = fmt.Sprintf("%s %s/%s", u.Kind, u.Namespace, u.Name)
	}
	if len(refs) >= v4.MaxUsedBy {
		names = append(names, "and more")
	}
	return strings.Join(names, ", ")
}
