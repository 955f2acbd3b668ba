package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/pki"
)

// The agent's own endpoint (docs/agent.md, Routes on the agent): the server forwards
// users' logs, actions and exec sessions here over mutual TLS, and only a berth server's
// certificate from the cluster CA is let in. Errors use the API's JSON envelope so the
// server can pass them through unchanged.

func (a *Agent) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/taskgroups/{ns}/{name}/logs", a.auth(a.handleLogs))
	mux.HandleFunc("POST /v1/taskgroups/{ns}/{name}/actions/{action}", a.auth(a.handleAction))
	mux.HandleFunc("POST /v1/taskgroups/{ns}/{name}/exec", a.auth(a.handleExec))
	mux.HandleFunc("GET /v1/taskgroups/{ns}/{name}/usage", a.auth(a.handleUsage))
	mux.HandleFunc("GET /v1/node/usage", a.auth(a.handleNodeUsage))
	mux.HandleFunc("POST /v1/csi/controller", a.auth(a.handleCSIController))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /metrics", a.auth(a.metrics.handler().ServeHTTP))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path)
	})
	return mux
}

// auth requires a berth server's client certificate (the TLS handshake verified it
// against the cluster CA): a node's certificate, or any other, is refused.
func (a *Agent) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || !pki.IsServer(r.TLS.PeerCertificates[0]) {
			writeError(w, http.StatusForbidden, "only the cluster's servers may call the agent")
			return
		}
		next(w, r)
	}
}

func (a *Agent) handleLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var opts driver.LogOptions
	if v := q.Get("follow"); v != "" {
		f, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "query parameter follow=%q is not a boolean", v)
			return
		}
		opts.Follow = f
	}
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "query parameter tail=%q is not a non-negative integer", v)
			return
		}
		opts.Tail = n
	}
	if v := q.Get("timestamps"); v != "" {
		ts, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "query parameter timestamps=%q is not a boolean", v)
			return
		}
		opts.Timestamps = ts
	}
	opts.Stream = q.Get("stream")
	if !v4.ValidLogStream(opts.Stream) {
		writeError(w, http.StatusBadRequest, "query parameter stream=%q: use %s or %s (none for both)", opts.Stream, v4.LogStreamStdout, v4.LogStreamStderr)
		return
	}
	rc, err := a.exec.Logs(r.Context(), r.PathValue("ns"), r.PathValue("name"), q.Get("task"), opts)
	if err != nil {
		writeExecError(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rcl := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil || rcl.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (a *Agent) handleAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	ns, name, task := r.PathValue("ns"), r.PathValue("name"), r.URL.Query().Get("task")
	var err error
	switch action {
	case v4.ActionReload, v4.ActionRestart:
		err = a.exec.Action(r.Context(), ns, name, task, action)
	case v4.ActionSignal:
		sig, perr := v4.ParseSignal(r.URL.Query().Get("signal"))
		if perr != nil {
			writeError(w, http.StatusBadRequest, "query parameter signal: %v", perr)
			return
		}
		err = a.exec.Signal(r.Context(), ns, name, task, syscall.Signal(sig))
	default:
		writeError(w, http.StatusNotFound, "unknown action %q: use %s, %s or %s", action, v4.ActionReload, v4.ActionRestart, v4.ActionSignal)
		return
	}
	if err != nil {
		writeExecError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeExecError maps the executor's errors: an unknown pod or task is a 404, anything
// else (a command that failed) a 500 with its message.
func writeExecError(w http.ResponseWriter, err error) {
	if errors.Is(err, executor.ErrUnknownPod) || errors.Is(err, driver.ErrNotFound) {
		writeError(w, http.StatusNotFound, "%v", err)
		return
	}
	writeError(w, http.StatusInternalServerError, "%v", err)
}

// writeError writes the API's error envelope.
func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, v4.ErrorBody{Error: &v4.Status{Code: code, Reason: v4.ReasonFor(code), Message: fmt.Sprintf(format, args...)}})
}

// writeJSON writes v as the answer's JSON body with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":{"code":500,"reason":"Internal","message":"cannot encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// handleUsage measures what a task group's tasks use now.
func (a *Agent) handleUsage(w http.ResponseWriter, r *http.Request) {
	tasks, err := a.exec.Usage(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		writeExecError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v4.TaskGroupUsage{Time: time.Now().UTC(), Node: a.cfg.NodeName, Tasks: tasks})
}
