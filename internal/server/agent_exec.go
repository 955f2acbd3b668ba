package server

import (
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/berthhq/berth/internal/execstream"
	"github.com/berthhq/berth/internal/httpapi"
)

// handleTaskGroupExec proxies `berth exec` to the agent of the task group's node: the
// client's upgrade request goes to POST /v1/taskgroups/{ns}/{name}/exec over TLS as the
// server (agent_proxy.go), and once the agent switches protocols the connection is spliced through as it
// is (httputil.ReverseProxy handles the 101), so the server never reads the frames.
func (s *Server) handleTaskGroupExec(w http.ResponseWriter, r *http.Request) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), execstream.Protocol) {
		return httpapi.Errorf(http.StatusBadRequest, "exec needs the headers Connection: Upgrade and Upgrade: %s (use berth exec)", execstream.Protocol)
	}
	if err := checkExecCommand(r); err != nil {
		return err
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	ns, name := r.PathValue("ns"), r.PathValue("name")
	addr, node, err := s.agentAddressOf(ctx, ns, name)
	if err != nil {
		return err
	}
	ctx = toAgent(ctx, node)
	target := agentExecURL(addr, ns, name, r.URL.Query())
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = addr
			pr.Out.Header.Del("Authorization") // never the user's credentials: the server's certificate speaks
		},
		Transport: s.agentHTTP.Transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away
			}
			s.writeError(w, r, httpapi.Errorf(http.StatusBadGateway, "cannot reach the agent of task group %s/%s at %s: %v", ns, name, addr, err))
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	proxy.ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// checkExecCommand refuses an exec without a command.
func checkExecCommand(r *http.Request) error {
	if len(r.URL.Query()["cmd"]) == 0 {
		return httpapi.Errorf(http.StatusBadRequest, "no command: give it as cmd=ARG, once per argument")
	}
	return nil
}

// agentExecURL is the agent's exec route for a task group, with the user's task, tty and
// command (and nothing else of the user's query).
func agentExecURL(addr, ns, name string, q url.Values) *url.URL {
	fwd := url.Values{}
	for _, k := range []string{"task", "tty", "cmd"} {
		if v, ok := q[k]; ok {
			fwd[k] = v
		}
	}
	return &url.URL{Scheme: "https", Host: addr,
		Path:     "/v1/taskgroups/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/exec",
		RawQuery: fwd.Encode()}
}
