package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/execstream"
	"github.com/berthhq/berth/internal/executor"
)

// handleExec runs a command in a task (berth exec): POST
// /v1/taskgroups/{ns}/{name}/exec?task=&tty=&cmd=...&cmd=..., upgraded to the
// execstream protocol. Errors found before the upgrade (no command, unknown task group)
// are plain API errors; after it they travel in the Exit frame.
func (a *Agent) handleExec(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	q := r.URL.Query()
	cmd := q["cmd"]
	if len(cmd) == 0 {
		writeError(w, http.StatusBadRequest, "no command: give it as cmd=ARG, once per argument")
		return
	}
	tty := false
	if v := q.Get("tty"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "query parameter tty=%q is not a boolean", v)
			return
		}
		tty = b
	}
	if !upgradeTo(r, execstream.Protocol) {
		writeError(w, http.StatusBadRequest, "exec needs the headers Connection: Upgrade and Upgrade: %s", execstream.Protocol)
		return
	}
	if _, ok := a.exec.Status(ns, name); !ok {
		writeError(w, http.StatusNotFound, "task group %s/%s: %v", ns, name, executor.ErrUnknownPod)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "cannot take over the connection: %v", err)
		return
	}
	// The session outlives the HTTP server's Shutdown (hijacked connections are not
	// tracked): the agent counts it and ends it with its run context.
	a.mu.Lock()
	if a.runCtx.Err() != nil {
		a.mu.Unlock()
		conn.Close()
		return
	}
	a.execWG.Add(1)
	a.mu.Unlock()
	defer a.execWG.Done()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(a.runCtx, cancel)()

	if _, err := brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + execstream.Protocol + "\r\n\r\n"); err == nil {
		err = brw.Flush()
	}
	if err != nil {
		conn.Close()
		return
	}
	task := q.Get("task")
	err = execstream.Serve(ctx, conn, brw.Reader, func(ctx context.Context, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
		a.log.Info("exec", "namespace", ns, "name", name, "task", task, "tty", tty, "cmd", cmd[0])
		return a.exec.Exec(ctx, ns, name, executor.ExecRequest{Task: task, Cmd: cmd, TTY: tty, Stdin: stdin, Stdout: stdout, Resize: resize})
	})
	if err != nil && ctx.Err() == nil {
		a.log.Warn("exec session", "namespace", ns, "name", name, "err", fmt.Errorf("end the exec stream: %w", err))
	}
}

// upgradeTo reports whether r asks to switch to protocol.
func upgradeTo(r *http.Request, protocol string) bool {
	hasUpgrade := false
	for _, v := range r.Header.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				hasUpgrade = true
			}
		}
	}
	return hasUpgrade && strings.EqualFold(r.Header.Get("Upgrade"), protocol)
}
