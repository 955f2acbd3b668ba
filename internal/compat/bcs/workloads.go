package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// workloadRoutes serves applications and processes: BCS's routes are the same for both
// but for the plural.
func (h *Handler) workloadRoutes() {
	for _, plural := range []string{"applications", "processes"} {
		base := "/namespaces/{ns}/" + plural
		h.mux.HandleFunc("POST "+base, h.create(plural))
		h.mux.HandleFunc("PUT "+base, h.update(plural))
		h.mux.HandleFunc("PUT "+base+"/rollback", h.update(plural))
		h.mux.HandleFunc("GET "+base, h.listWorkloads(plural))
		h.mux.HandleFunc("GET "+base+"/{name}", h.getWorkload(plural))
		h.mux.HandleFunc("DELETE "+base+"/{name}", h.delete(plural))
		h.mux.HandleFunc("PUT "+base+"/{name}/scale/{n}", h.scale(plural))
		h.mux.HandleFunc("GET "+base+"/{name}/taskgroups", h.taskGroups(plural))
		h.mux.HandleFunc("GET "+base+"/{name}/versions", h.versions(plural))
		h.mux.HandleFunc("GET "+base+"/{name}/versions/{version}", h.version(plural))
		h.mux.HandleFunc("PUT "+base+"/{name}/taskgroups/{tg}/rescheduler", h.reschedule)
		h.mux.HandleFunc("POST "+base+"/{name}/taskgroups/{tg}/{action}", h.taskGroupAction)
		h.mux.HandleFunc("POST "+base+"/{name}/message", h.applicationMessage(plural))
	}
	h.mux.HandleFunc("GET /definition/{kind}/{ns}/{name}", h.definition)
}

// head is what the front door reads of a document before it forwards it: BCS's decoder
// matched keys in any case, and so does encoding/json here.
type head struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Instance *int `json:"instance"`
	} `json:"spec"`
}

func readHead(r *http.Request) (head, *failure) {
	var hd head
	if err := json.Unmarshal(v1call.Body(r), &hd); err != nil {
		return hd, &failure{code: CodeJSONDecode, message: "the body is not a JSON document: " + err.Error()}
	}
	if hd.Metadata.Name == "" {
		return hd, &failure{code: CodeBadRequestData, message: "metadata.name: required"}
	}
	return hd, nil
}

// validateQuery is the /v1 query that carries the request's ?validate= (berth's: BCS had
// none), which says how strictly /v1 reads the document (docs/api.md): nil when absent.
// A bad value is refused here, as BCS's driver refused its bad parameters.
func validateQuery(r *http.Request) (url.Values, *failure) {
	v := r.URL.Query().Get("validate")
	if v == "" {
		return nil, nil
	}
	if _, err := v4.ParseValidation(v); err != nil {
		return nil, &failure{code: CodeDriverParameter, message: "query parameter " + err.Error()}
	}
	return url.Values{"validate": {v}}, nil
}

// create forwards a POST of a new object. The body is read first so that one that is
// not a JSON document gets BCS's 1405010, as from every other route, not /v1's 400.
func (h *Handler) create(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, f := validateQuery(r)
		if f == nil {
			_, f = readHead(r)
		}
		if f != nil {
			writeFailure(w, *f)
			return
		}
		a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", r.PathValue("ns"), plural), q, v1call.Body(r))
		h.finish(w, a, true, nil)
	}
}

// update forwards a PUT of an object named by its body: BCS's update and rollback routes
// carry no name in the path. Then, as BCS did, it replaces the first ?instances=N
// instances (all without it, update.go). BCS's ?args=resource changed resources in
// place; berth replaces the instances, and says so.
func (h *Handler) update(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vq, f := validateQuery(r)
		hd, hf := readHead(r)
		if f == nil {
			f = hf
		}
		if f != nil {
			writeFailure(w, *f)
			return
		}
		n, f := replaceCount(r)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		var warnings []string
		if r.URL.Query().Get("args") == "resource" {
			warnings = append(warnings, v1call.Warning(
				"args=resource: berth replaces the instances to change their resources (BCS: in place)"))
		}
		a := h.v1.Call(r, http.MethodPut, v1call.Path("namespaces", r.PathValue("ns"), plural, hd.Metadata.Name), vq, v1call.Body(r))
		if a.OK() {
			warnings = append(warnings, h.replaceFirst(r, plural, hd.Metadata.Name, n)...)
		}
		h.finish(w, a, false, warnings)
	}
}

// delete forwards a DELETE. BCS's ?enforce deleted an application in a rolling update;
// berth deletes the deployment, which owns it, instead.
func (h *Handler) delete(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := h.v1.Call(r, http.MethodDelete, v1call.Path("namespaces", r.PathValue("ns"), plural, r.PathValue("name")), nil, nil)
		if a.Status == http.StatusNotFound && h.refuseProcessWrite(w, r, plural) {
			return
		}
		h.finish(w, a, false, nil)
	}
}

// scale forwards BCS's PUT .../scale/{n}.
func (h *Handler) scale(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil {
			writeFailure(w, failure{code: CodeDriverParameter,
				message: fmt.Sprintf("instances %q in the path is not a whole number", r.PathValue("n"))})
			return
		}
		if n < 1 { // BCS refused it; /v1 scales to zero, BCS's clients keep BCS's answer
			writeFailure(w, failure{code: CodeBadRequestData,
				message: fmt.Sprintf("instances must be at least 1, got %d (BCS cannot scale to 0; berth's /v1 scale route can)", n)})
			return
		}
		body, _ := json.Marshal(map[string]int{"instances": n})
		a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", r.PathValue("ns"), plural, r.PathValue("name"), "scale"), nil, body)
		if a.Status == http.StatusNotFound && h.refuseProcessWrite(w, r, plural) {
			return
		}
		h.finish(w, a, false, nil)
	}
}

// reschedule is BCS's manual reschedule of one task group: berth moves it, forced, to
// whichever node the scheduler picks.
func (h *Handler) reschedule(w http.ResponseWriter, r *http.Request) {
	if f := checkOwner(r); f != nil {
		writeFailure(w, *f)
		return
	}
	var warnings []string
	if r.URL.Query().Get("hostRetainTime") != "" {
		warnings = append(warnings, v1call.Warning("hostRetainTime is ignored by berth: the scheduler picks the node at once"))
	}
	body := []byte(`{"force": true, "orHere": true}`)
	a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", r.PathValue("ns"), "taskgroups", r.PathValue("tg"), "move"), nil, body)
	h.finish(w, a, false, warnings)
}

// taskGroupAction serves restart and reload (a process's restartCmd and reloadCmd) and
// message (BCS's framework messages to the executor, messages.go).
func (h *Handler) taskGroupAction(w http.ResponseWriter, r *http.Request) {
	if f := checkOwner(r); f != nil {
		writeFailure(w, *f)
		return
	}
	action := r.PathValue("action")
	switch action {
	case "restart", "reload":
		a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", r.PathValue("ns"), "taskgroups", r.PathValue("tg"), "actions", action), nil, nil)
		h.finish(w, a, false, nil)
	case "message":
		h.taskGroupMessage(w, r)
	default:
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound,
			message: fmt.Sprintf("no task group action %q (restart, reload or message)", action)})
	}
}

// checkOwner refuses a task group of another application than the path's: a task group
// ID is "{index}.{application}.{namespace}.{cluster}.{time}".
func checkOwner(r *http.Request) *failure {
	tg, name := r.PathValue("tg"), r.PathValue("name")
	if parts := strings.Split(tg, "."); len(parts) < 3 || parts[1] != name || parts[2] != r.PathValue("ns") {
		return &failure{code: CodeNotFound, message: fmt.Sprintf("task group %s is not one of %s/%s", tg, r.PathValue("ns"), name)}
	}
	return nil
}

// definition serves the document as it was written, as BCS's /definition route did.
func (h *Handler) definition(w http.ResponseWriter, r *http.Request) {
	plural := r.PathValue("kind")
	if !strings.HasSuffix(plural, "s") {
		plural += "s"
	}
	a := h.v1.Call(r, http.MethodGet, v1call.Path("namespaces", r.PathValue("ns"), plural, r.PathValue("name"), "definition"), nil, nil)
	if !a.OK() {
		writeFailure(w, failureOf(a, false))
		return
	}
	var doc any
	if err := json.Unmarshal(a.Body, &doc); err != nil {
		doc = string(a.Body) // a YAML definition, written through /v1
	}
	writeSuccess(w, doc, a.Warnings)
}

// finish answers a forwarded write: BCS's success carries no data.
func (h *Handler) finish(w http.ResponseWriter, a v1call.Answer, create bool, warnings []string) {
	if !a.OK() {
		writeFailure(w, failureOf(a, create))
		return
	}
	writeSuccess(w, nil, append(warnings, a.Warnings...))
}
