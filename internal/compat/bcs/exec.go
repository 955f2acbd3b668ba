package bcs

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// `bcs-client exec` spoke to BCS's console proxy through the driver's /webconsole routes:
// create_exec for a Docker container ID (which it read from storage's task group) and a
// command, answered as Docker answers, {"Id": ...}; start_exec, a WebSocket carrying the
// terminal's bytes both ways; resize_exec with the terminal's size. berth serves the three
// over its own exec stream: the container ID is looked up among the task groups the
// caller may read, and start_exec makes the /v1 exec upgrade on the caller's behalf, so
// the exec right in the task group's namespace is checked and audited as for berth exec.

func (h *Handler) execRoutes() {
	h.mux.HandleFunc("POST /webconsole/create_exec", h.createExec)
	h.mux.HandleFunc("GET /webconsole/start_exec", h.startExec)
	h.mux.HandleFunc("POST /webconsole/resize_exec", h.resizeExec)
}

// execSpec is what create_exec resolved: the task and the command. The exec ID is this,
// encoded: it holds no right, start_exec authorizes the caller again, so no state needs
// to be kept between the two calls.
type execSpec struct {
	Namespace string   `json:"ns"`
	TaskGroup string   `json:"tg"`
	Task      string   `json:"task"`
	Cmd       []string `json:"cmd"`
}

// Limits of a command, and of the exec ID that carries it in start_exec's URL.
const (
	maxExecArgs  = 64
	maxExecBytes = 4 << 10
	maxExecID    = 16 << 10
)

func (s execSpec) id() string {
	b, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseExecID(id string) (execSpec, error) {
	var s execSpec
	if id == "" {
		return s, fmt.Errorf("exec_id is required (create_exec's Id)")
	}
	if len(id) > maxExecID {
		return s, fmt.Errorf("exec_id is longer than any create_exec answers")
	}
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil || s.Namespace == "" || s.TaskGroup == "" || s.Task == "" || len(s.Cmd) == 0 {
		return s, fmt.Errorf("exec_id %q is not one create_exec answered", id)
	}
	return s, nil
}

// createExecRequest is the body bcs-client sends to create_exec.
type createExecRequest struct {
	ContainerID string   `json:"container_id"`
	Cmd         []string `json:"cmd"`
}

func (r createExecRequest) check() error {
	if r.ContainerID == "" {
		return fmt.Errorf("container_id: required")
	}
	if len(r.Cmd) == 0 || r.Cmd[0] == "" {
		return fmt.Errorf("cmd: a command is required")
	}
	size := 0
	for _, a := range r.Cmd {
		size += len(a)
	}
	if len(r.Cmd) > maxExecArgs || size > maxExecBytes {
		return fmt.Errorf("cmd: at most %d arguments of %d bytes in all", maxExecArgs, maxExecBytes)
	}
	return nil
}

// createExec serves POST /webconsole/create_exec?host_ip=. Its answer is Docker's, not
// BCS's envelope: bcs-client decodes {"Id"} from it directly.
func (h *Handler) createExec(w http.ResponseWriter, r *http.Request) {
	var req createExecRequest
	if err := json.Unmarshal(v1call.Body(r), &req); err != nil {
		writeFailure(w, failure{code: CodeJSONDecode, message: "the body is not create_exec's {\"container_id\", \"cmd\"}: " + err.Error()})
		return
	}
	if err := req.check(); err != nil {
		writeFailure(w, failure{code: CodeBadRequestData, message: err.Error()})
		return
	}
	spec, f := h.findContainer(r, req.ContainerID)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	spec.Cmd = req.Cmd
	id := spec.id()
	if len(id) > maxExecID { // arguments that JSON escapes at length
		writeFailure(w, failure{code: CodeBadRequestData, message: fmt.Sprintf("cmd: its exec ID would be over %d bytes", maxExecID)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"Id": id})
}

// findContainer finds the live task whose container ID is id (or starts with it, as
// Docker's short IDs do) among the task groups of the namespaces the caller may read:
// a token limited to namespaces finds only its own.
func (h *Handler) findContainer(r *http.Request, id string) (execSpec, *failure) {
	names, a := v1call.Get[v4.NamespaceList](h.v1, r, v1call.Path("namespaces"))
	if a != nil {
		f := failureOf(*a, false)
		return execSpec{}, &f
	}
	for _, ns := range names.Items {
		tgs, a := v1call.List[*v4.TaskGroup](h.v1, r, v1call.Path("namespaces", ns, "taskgroups"))
		if a != nil {
			if a.Status == http.StatusForbidden {
				continue // listed for another right (a namespace it may exec in only, say)
			}
			f := failureOf(*a, false)
			return execSpec{}, &f
		}
		for _, tg := range tgs {
			if v4.Terminal(tg.Status.Phase) {
				continue
			}
			for _, ts := range tg.Status.Tasks {
				if ts.Info.ID != "" && (ts.Info.ID == id || len(id) >= 12 && strings.HasPrefix(ts.Info.ID, id)) {
					return execSpec{Namespace: ns, TaskGroup: tg.Metadata.Name, Task: ts.Name}, nil
				}
			}
		}
	}
	return execSpec{}, &failure{status: http.StatusNotFound, code: CodeNotFound,
		message: fmt.Sprintf("no running container %q in a namespace this token may read", id)}
}

// resizeExecRequest is the body bcs-client sends to resize_exec.
type resizeExecRequest struct {
	ExecID string `json:"exec_id"`
	Height int    `json:"height"`
	Width  int    `json:"width"`
}

// resizeExec serves POST /webconsole/resize_exec: the size goes to the session start_exec
// opened with that exec ID and the same credentials.
func (h *Handler) resizeExec(w http.ResponseWriter, r *http.Request) {
	var req resizeExecRequest
	if err := json.Unmarshal(v1call.Body(r), &req); err != nil {
		writeFailure(w, failure{code: CodeJSONDecode, message: "the body is not resize_exec's {\"exec_id\", \"height\", \"width\"}: " + err.Error()})
		return
	}
	if req.Height < 1 || req.Height > 0xffff || req.Width < 1 || req.Width > 0xffff {
		writeFailure(w, failure{code: CodeBadRequestData, message: fmt.Sprintf("height and width: 1 to 65535, got %d and %d", req.Height, req.Width)})
		return
	}
	s := h.execs.find(req.ExecID, credentialOf(r))
	if s == nil {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound,
			message: "no exec session of yours started with this exec_id (start_exec opens it)"})
		return
	}
	if err := s.resize(v4.TermSize{Rows: uint16(req.Height), Cols: uint16(req.Width)}); err != nil {
		// The command ended while this request came (its stream closed before the session
		// left the registry): the same answer as for a session that ended earlier.
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound,
			message: "the exec session with this exec_id has ended: " + err.Error()})
		return
	}
	writeSuccess(w, nil, nil)
}
