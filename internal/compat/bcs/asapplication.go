package bcs

import (
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// BCS stored processes as applications (kind process, the same store and routes), so
// its clients read and signal a process through /applications/{name}/...: berth's
// application and process are two kinds. An application name that does not exist as an
// application resolves to the namespace's process of that name on the reads (get, task
// groups, versions) and the messages. The writes (update, scale, delete) do not: BCS
// checked their kind, and a write to the wrong kind is refused, naming the right route.

// workloadOf reads the path's application or process, and answers the plural it is of:
// a process in place of a missing application.
func (h *Handler) workloadOf(r *http.Request, plural string) (*v4.Workload, string, *failure) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	wl, f := one[v4.Workload](h, r, ns, plural, name)
	if f == nil || f.code != CodeNotFound || plural != "applications" {
		return wl, plural, f
	}
	if p, pf := one[v4.Workload](h, r, ns, "processes", name); pf == nil {
		return p, "processes", nil
	}
	return nil, plural, f
}

// refuseProcessWrite answers a write to /applications/{name} of a missing application
// that is a process, naming the processes route, and says whether it did.
func (h *Handler) refuseProcessWrite(w http.ResponseWriter, r *http.Request, plural string) bool {
	if plural != "applications" {
		return false
	}
	_, got, f := h.workloadOf(r, plural)
	if f != nil || got == plural {
		return false
	}
	writeFailure(w, failure{code: CodeNotFound, message: fmt.Sprintf(
		"application %s/%s does not exist; process %s/%s does: write it through .../namespaces/%s/processes/%s (BCS checked the kind of its writes too)",
		r.PathValue("ns"), r.PathValue("name"), r.PathValue("ns"), r.PathValue("name"), r.PathValue("ns"), r.PathValue("name"))})
	return true
}
