package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
)

// Users' logs and actions of a task group are served by the agent of its node: the
// server finds the node's agent address and forwards the request over TLS, presenting its
// own client certificate and accepting only the certificate of that node's agent
// (docs/agent.md, Routes on the agent). A node whose address was changed to point
// elsewhere gets nothing: the other end cannot prove it is the node's agent.

// actionTimeout bounds a reload or restart command run by the agent.
const actionTimeout = 2 * time.Minute

type agentNodeKey struct{}

// toAgent marks a context with the node whose agent a request must reach.
func toAgent(ctx context.Context, node string) context.Context {
	return context.WithValue(ctx, agentNodeKey{}, node)
}

// newAgentHTTPClient reaches agents. Each connection is verified against the node of its
// request's context, so connections are not kept for reuse: a kept one would be reused for
// whatever node is at that address next.
func newAgentHTTPClient(ca *pki.CA, id *pki.Rotating) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	roots := ca.Pool()
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil, // agents are reached directly, never through $HTTP_PROXY
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: actionTimeout,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			node, _ := ctx.Value(agentNodeKey{}).(string)
			if node == "" {
				return nil, errors.New("no node to check the agent's certificate against")
			}
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, pki.Hardened(&tls.Config{
				NextProtos: []string{"http/1.1"},
				// Agents are verified by the node their certificate names, not by a host
				// name: VerifyConnection does the whole check.
				InsecureSkipVerify:   true,
				GetClientCertificate: id.GetClientCertificate,
				VerifyConnection:     func(cs tls.ConnectionState) error { return verifyAgent(cs.PeerCertificates, roots, node) },
			}))
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return conn, nil
		},
	}}
}

// verifyAgent accepts the certificate of node's agent from the cluster CA, nothing else.
func verifyAgent(certs []*x509.Certificate, roots *x509.CertPool, node string) error {
	if len(certs) == 0 {
		return errors.New("the agent sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("the agent's certificate is not from this cluster's CA: %w", err)
	}
	got, ok := pki.NodeOf(certs[0])
	if !ok || got != node {
		return fmt.Errorf("the certificate there is for %q, not node %s's agent", certs[0].Subject.CommonName, node)
	}
	return nil
}

// handleTaskGroupLogs streams a task's output from the agent
// (?task=&follow=&tail=&stream=&timestamps=), as text/plain.
func (s *Server) handleTaskGroupLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for _, k := range []string{"follow", "timestamps"} {
		if _, err := httpapi.BoolParam(q.Get(k), k); err != nil {
			return err
		}
	}
	if v := q.Get("tail"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return httpapi.Errorf(http.StatusBadRequest, "query parameter tail=%q is not a non-negative integer", v).WithDetail("tail", "a number of lines, 0 for all")
		}
	}
	if v := q.Get("stream"); !v4.ValidLogStream(v) {
		return httpapi.Errorf(http.StatusBadRequest, "query parameter stream=%q: use %s or %s (none for both)", v, v4.LogStreamStdout, v4.LogStreamStderr).
			WithDetail("stream", "stdout or stderr")
	}
	fwd := url.Values{}
	for _, k := range []string{"task", "follow", "tail", "stream", "timestamps"} {
		if v := q.Get(k); v != "" {
			fwd.Set(k, v)
		}
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	return s.proxyToAgent(ctx, w, r, http.MethodGet, "logs", fwd)
}

// usageTimeout bounds a usage read on the agent (a cgroup read, or one sample from Docker).
const usageTimeout = 10 * time.Second

// handleTaskGroupUsage answers what the task group's tasks use now, measured on its node
// (v4.TaskGroupUsage).
func (s *Server) handleTaskGroupUsage(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	return s.proxyToAgent(ctx, w, r, http.MethodGet, "usage", nil)
}

// handleTaskGroupAction runs a process's reloadCmd or restartCmd through the agent.
func (s *Server) handleTaskGroupAction(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	fwd := url.Values{}
	switch action {
	case v4.ActionReload, v4.ActionRestart:
	case v4.ActionSignal:
		sig, err := v4.ParseSignal(r.URL.Query().Get("signal"))
		if err != nil {
			return httpapi.Errorf(http.StatusBadRequest, "query parameter signal: %v", err).WithDetail("signal", "a number (1-64) or a name (HUP, TERM, USR1, ...)")
		}
		fwd.Set("signal", strconv.Itoa(sig))
	default:
		return httpapi.Errorf(http.StatusNotFound, "unknown action %q: use %s, %s or %s", action, v4.ActionReload, v4.ActionRestart, v4.ActionSignal)
	}
	if t := r.URL.Query().Get("task"); t != "" {
		fwd.Set("task", t)
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	return s.proxyToAgent(ctx, w, r, http.MethodPost, "actions/"+action, fwd)
}

// proxyToAgent forwards to /v1/taskgroups/{ns}/{name}/{sub} on the task group's agent and
// copies the answer back, flushing as it arrives (logs with follow=true stream).
func (s *Server) proxyToAgent(ctx context.Context, w http.ResponseWriter, r *http.Request, method, sub string, q url.Values) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	addr, node, err := s.agentAddressOf(ctx, ns, name)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: "https", Host: addr,
		Path:     "/v1/taskgroups/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/" + sub,
		RawQuery: q.Encode()}
	return s.forwardToAgent(ctx, w, r, node, method, u, "task group "+ns+"/"+name)
}

// forwardToAgent sends a request to u on node's agent (its certificate checked against
// the node) and copies the answer back, flushing as it arrives. what names the request's
// subject in errors.
func (s *Server) forwardToAgent(ctx context.Context, w http.ResponseWriter, r *http.Request, node, method string, u url.URL, what string) error {
	req, err := http.NewRequestWithContext(toAgent(ctx, node), method, u.String(), nil)
	if err != nil {
		return httpapi.Errorf(http.StatusBadGateway, "bad agent address %q for %s: %v", u.Host, what, err)
	}
	if v := r.Header.Get("Accept"); v != "" { // Prometheus negotiates its format
		req.Header.Set("Accept", v)
	}
	resp, err := s.agentHTTP.Do(req)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the client went away
		}
		return httpapi.Errorf(http.StatusBadGateway, "cannot reach the agent of %s at %s: %v", what, u.Host, unwrapURL(err))
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "X-Content-Type-Options", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	copyFlushing(w, resp.Body)
	return nil
}

// agentAddressOf finds where the agent running task group ns/name serves, and its node:
// 404 for an unknown task group, 409 when it is not placed yet, 502 when its node has no
// agent.
func (s *Server) agentAddressOf(ctx context.Context, ns, name string) (addr, node string, err error) {
	tg, err := store.Typed[*v4.TaskGroup](s.store, v4.KindTaskGroup).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", httpapi.Errorf(http.StatusNotFound, "task group %s/%s not found", ns, name)
	}
	if err != nil {
		return "", "", err
	}
	if tg.Spec.Node == "" {
		return "", "", httpapi.Errorf(http.StatusConflict, "task group %s/%s has no node yet", ns, name)
	}
	n, err := s.nodes().Get(ctx, "", tg.Spec.Node)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", httpapi.Errorf(http.StatusBadGateway, "node %s of task group %s/%s is not registered", tg.Spec.Node, ns, name)
	}
	if err != nil {
		return "", "", err
	}
	if n.Status.AgentAddress == "" {
		return "", "", httpapi.Errorf(http.StatusBadGateway, "the agent of node %s has not said where it serves (no status.agentAddress)", n.Metadata.Name)
	}
	return n.Status.AgentAddress, n.Metadata.Name, nil
}

// copyFlushing copies src to w, flushing after every read so streamed logs reach the
// client as the agent sends them.
func copyFlushing(w http.ResponseWriter, src io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// unwrapURL drops *url.Error's repetition of method and URL.
func unwrapURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
