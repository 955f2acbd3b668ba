package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/execstream"
	"github.com/berthhq/berth/internal/httpapi"
)

// The web console's exec terminal. A browser cannot make the HTTP upgrade `berth exec`
// makes (berth-exec.v1), nor set an Authorization header on a WebSocket, so the console
// opens a WebSocket at GET .../taskgroups/{name}/exec/ws with two subprotocols:
// berth-exec.v1, and berth.bearer.<the token in base64url> that identify reads as the
// bearer token. The server makes the usual exec upgrade to the agent and relays: each
// binary message is one exec frame, checked on its way from the browser
// (execstream.CheckClientFrame), passed whole on its way back.

// wsBearerPrefix marks the subprotocol that carries a WebSocket's bearer token.
const wsBearerPrefix = "berth.bearer."

// websocketBearer is the bearer token of a WebSocket upgrade request's subprotocols, "" if
// it carries none (or one that does not decode).
func websocketBearer(r *http.Request) string {
	if !websocket.IsWebSocketUpgrade(r) {
		return ""
	}
	for _, p := range websocket.Subprotocols(r) {
		if enc, ok := strings.CutPrefix(p, wsBearerPrefix); ok {
			tok, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				return ""
			}
			return string(tok)
		}
	}
	return ""
}

// wsPingEvery keeps an idle terminal's connection alive through proxies, and finds a
// browser that went away without closing.
const wsPingEvery = 30 * time.Second

func (s *Server) handleTaskGroupExecWS(w http.ResponseWriter, r *http.Request) error {
	if !websocket.IsWebSocketUpgrade(r) {
		return httpapi.Errorf(http.StatusBadRequest, "exec/ws is a WebSocket (the web console's terminal); berth exec uses POST .../exec")
	}
	if err := checkExecCommand(r); err != nil {
		return err
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	ns, name := r.PathValue("ns"), r.PathValue("name")
	agentConn, refused, err := s.dialAgentExec(ctx, ns, name, r.URL.Query())
	if err != nil {
		return err
	}
	if refused != nil { // the agent's own error (an unknown task, an ended one) passes through
		defer refused.Body.Close()
		w.Header().Set("Content-Type", refused.Header.Get("Content-Type"))
		w.WriteHeader(refused.StatusCode)
		io.Copy(w, io.LimitReader(refused.Body, 64<<10))
		return nil
	}
	defer agentConn.Close()
	up := websocket.Upgrader{Subprotocols: []string{execstream.Protocol}, HandshakeTimeout: 10 * time.Second}
	ws, err := up.Upgrade(hijacker{w}, r, nil) // answers the browser itself on failure (a bad Origin: 403)
	if err != nil {
		return nil
	}
	defer ws.Close()
	ws.SetReadLimit(execstream.MaxMessage)
	relayExec(ctx, ws, agentConn)
	return nil
}

// hijacker lets the WebSocket library take the connection through the middleware's
// response writers (they unwrap to the server's; the library asks for http.Hijacker).
type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

// dialAgentExec makes the exec upgrade to the agent of the task group's node. When the
// agent answers without switching protocols, its answer is returned instead.
func (s *Server) dialAgentExec(ctx context.Context, ns, name string, q url.Values) (io.ReadWriteCloser, *http.Response, error) {
	addr, node, err := s.agentAddressOf(ctx, ns, name)
	if err != nil {
		return nil, nil, err
	}
	target := agentExecURL(addr, ns, name, q)
	req, err := http.NewRequestWithContext(toAgent(ctx, node), http.MethodPost, target.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", execstream.Protocol)
	resp, err := s.agentHTTP.Do(req)
	if err != nil {
		return nil, nil, httpapi.Errorf(http.StatusBadGateway, "cannot reach the agent of task group %s/%s at %s: %v", ns, name, addr, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, resp, nil
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, nil, httpapi.Errorf(http.StatusBadGateway, "the agent's exec connection is not writable")
	}
	return conn, nil, nil
}

// relayExec copies frames both ways until either side ends; the agent's exit frame is the
// last the browser gets, then a normal close.
func relayExec(ctx context.Context, ws *websocket.Conn, agent io.ReadWriteCloser) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { agent.Close(); ws.Close() })
	defer stop()
	var writeMu sync.Mutex // gorilla allows one writer at a time: the relay and the pings
	send := func(typ int, p []byte) error {
		writeMu.Lock()
		defer writeMu.Unlock()
		ws.SetWriteDeadline(time.Now().Add(wsPingEvery))
		return ws.WriteMessage(typ, p)
	}
	var wg sync.WaitGroup
	wg.Go(func() { // browser -> agent
		defer cancel()
		for {
			typ, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if typ != websocket.BinaryMessage {
				continue
			}
			if err := execstream.CheckClientFrame(msg); err != nil {
				writeMu.Lock()
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, err.Error()), time.Now().Add(time.Second))
				writeMu.Unlock()
				return
			}
			if _, err := agent.Write(msg); err != nil {
				return
			}
		}
	})
	wg.Go(func() { // agent -> browser
		defer cancel()
		for {
			msg, err := execstream.ReadFrame(agent)
			if err != nil {
				if errors.Is(err, io.EOF) {
					writeMu.Lock()
					ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
					writeMu.Unlock()
				}
				return
			}
			if err := send(websocket.BinaryMessage, msg); err != nil {
				return
			}
		}
	})
	wg.Go(func() {
		ping := func() error { return send(websocket.PingMessage, nil) }
		if err := ctxtime.EveryUntilError(ctx, wsPingEvery, ping); err != nil {
			cancel()
		}
	})
	wg.Wait()
}
