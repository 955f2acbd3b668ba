package bcs

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/execstream"
)

// startExec serves start_exec: the /v1 exec upgrade is made first, on the caller's
// behalf (anything refused is answered in BCS's envelope before the WebSocket exists),
// then bcs-client's WebSocket is accepted and relayed: its messages are the command's
// input, the command's output goes back as binary messages, a terminal's size comes by
// resize_exec. The command runs with a terminal: bcs-client copies a terminal's bytes
// as they come (`exec -t`); without -t it reads Docker's multiplexed frames, which a
// terminal does not have.
func (h *Handler) startExec(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("exec_id")
	spec, err := parseExecID(id)
	if err != nil {
		writeFailure(w, failure{code: CodeDriverParameter, message: err.Error()})
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		writeFailure(w, failure{status: http.StatusBadRequest, code: CodeDriverParameter, message: "start_exec is a WebSocket (bcs-client exec opens it)"})
		return
	}
	agent, done, f := h.execUpgrade(r, spec)
	if f != nil {
		<-done // the /v1 call has answered, or ends with the stream closed
		writeFailure(w, *f)
		return
	}
	defer func() { agent.Close(); <-done }()
	// Registered before the client hears the upgrade, so the resize_exec it sends as soon
	// as the WebSocket is open finds the session.
	s := &execSession{agent: agent}
	defer h.execs.add(id, credentialOf(r), s)()
	up := websocket.Upgrader{HandshakeTimeout: 10 * time.Second}
	ws, err := up.Upgrade(hijacker{w}, r, nil) // answers the client itself on failure
	if err != nil {
		return
	}
	defer ws.Close()
	ws.SetReadLimit(execstream.MaxMessage)
	s.relay(r.Context(), ws)
}

// hijacker lets the WebSocket library take the connection through the server's
// response writers (they unwrap to the connection's; the library asks for http.Hijacker).
type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

// execUpgrade makes POST /v1/namespaces/{ns}/taskgroups/{tg}/exec with the upgrade to
// berth's exec stream through the inner /v1 handler, in process: the handler takes a
// pipe for the connection, and the stream is the pipe's other end. done closes when the
// /v1 handler has returned, after the stream is closed.
func (h *Handler) execUpgrade(r *http.Request, spec execSpec) (io.ReadWriteCloser, <-chan struct{}, *failure) {
	q := url.Values{"task": {spec.Task}, "tty": {"true"}, "cmd": spec.Cmd}
	u := &url.URL{Path: v1call.Path("namespaces", spec.Namespace, "taskgroups", spec.TaskGroup, "exec"), RawQuery: q.Encode()}
	inner := v1call.Request(r, http.MethodPost, u, nil)
	for _, k := range []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol"} {
		inner.Header.Del(k)
	}
	inner.Header.Set("Connection", "Upgrade")
	inner.Header.Set("Upgrade", execstream.Protocol)
	ours, theirs := net.Pipe()
	pw := &pipeWriter{header: http.Header{}, conn: theirs, hijacked: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.v1.Inner.ServeHTTP(pw, inner)
		if !pw.wasHijacked() {
			theirs.Close()
		}
	}()
	select {
	case <-pw.hijacked:
	case <-done:
		ours.Close()
		f := failureOf(v1call.Answer{Status: pw.status, Body: pw.body}, false)
		return nil, done, &f
	}
	br := bufio.NewReader(ours)
	resp, err := http.ReadResponse(br, inner)
	if err == nil && resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		err = errors.New(v1call.Answer{Status: resp.StatusCode, Body: body}.Message())
	}
	if err != nil {
		ours.Close()
		return nil, done, &failure{code: CodeScheduler, message: "start the exec stream: " + err.Error()}
	}
	return bufferedConn{Reader: br, Conn: ours}, done, nil
}

// bufferedConn reads what the response reader read ahead first.
type bufferedConn struct {
	*bufio.Reader
	net.Conn
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }

// pipeWriter is the ResponseWriter of the in-process /v1 exec call: an answer that is
// not an upgrade is kept (status, body); a hijack gets the pipe.
type pipeWriter struct {
	header   http.Header
	status   int
	body     []byte
	conn     net.Conn
	mu       sync.Mutex
	hijacked chan struct{}
	done     bool
}

func (p *pipeWriter) Header() http.Header { return p.header }

func (p *pipeWriter) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	if len(p.body)+len(b) > 64<<10 {
		return 0, errors.New("the answer is over 64 KiB")
	}
	p.body = append(p.body, b...)
	return len(b), nil
}

func (p *pipeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return nil, nil, errors.New("already hijacked")
	}
	p.done = true
	close(p.hijacked)
	return p.conn, bufio.NewReadWriter(bufio.NewReader(p.conn), bufio.NewWriter(p.conn)), nil
}

func (p *pipeWriter) wasHijacked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// execSession is one started exec: its stream to the agent, written by the relay's
// input and by resize_exec.
type execSession struct {
	agent io.ReadWriteCloser
	mu    sync.Mutex
	ended bool // the command exited: nothing more reaches it
}

// errExecEnded is a write to a session whose command exited.
var errExecEnded = errors.New("the command exited")

// end marks the command exited, before the client hears of it, so that a resize_exec the
// client sends after the close finds the session ended.
func (s *execSession) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
}

// frame writes one exec frame.
func (s *execSession) frame(typ byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errExecEnded
	}
	hdr := [5]byte{typ}
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	_, err := s.agent.Write(append(hdr[:], p...))
	return err
}

func (s *execSession) resize(size v4.TermSize) error {
	b, _ := json.Marshal(size)
	return s.frame(execstream.FrameResize, b)
}

// wsPingEvery keeps an idle terminal's connection alive through proxies, and finds a
// client that went away without closing.
const wsPingEvery = 30 * time.Second

// relay copies the client's messages to the command's input and its output back, until
// either side ends; the command's exit ends the WebSocket normally (with its error, if it
// could not run, as the close reason).
func (s *execSession) relay(ctx context.Context, ws *websocket.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { s.agent.Close(); ws.Close() })
	defer stop()
	var writeMu sync.Mutex // one writer at a time: the output and the pings
	send := func(typ int, p []byte) error {
		writeMu.Lock()
		defer writeMu.Unlock()
		ws.SetWriteDeadline(time.Now().Add(wsPingEvery))
		return ws.WriteMessage(typ, p)
	}
	closeWith := func(code int, text string) {
		writeMu.Lock()
		defer writeMu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	}
	var wg sync.WaitGroup
	wg.Go(func() { // client -> command
		defer cancel()
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			for len(msg) > 0 {
				n := min(len(msg), 32<<10)
				if s.frame(execstream.FrameStdin, msg[:n]) != nil {
					return
				}
				msg = msg[n:]
			}
		}
	})
	wg.Go(func() { // command -> client
		defer cancel()
		for {
			f, err := execstream.ReadFrame(s.agent)
			if err != nil {
				return
			}
			switch f[0] {
			case execstream.FrameStdout:
				if send(websocket.BinaryMessage, f[5:]) != nil {
					return
				}
			case execstream.FrameExit:
				var e v4.ExecExit
				json.Unmarshal(f[5:], &e)
				s.end()
				closeWith(websocket.CloseNormalClosure, truncate(e.Error, 120))
				return
			}
		}
	})
	wg.Go(func() {
		ping := func() error { return send(websocket.PingMessage, nil) }
		if ctxtime.EveryUntilError(ctx, wsPingEvery, ping) != nil {
			cancel()
		}
	})
	wg.Wait()
}

// truncate cuts s to n bytes (a close reason has little room).
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
