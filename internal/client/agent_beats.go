package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// heartbeatAckWait is how long a beat that was due an acknowledgement waits for it
// before the stream is taken for dead (a server whose machine froze sends no FIN).
const heartbeatAckWait = 15 * time.Second

// HeartbeatStream is an agent's open heartbeat stream to one server (AgentHeartbeats).
// Beat and Close are called from one goroutine.
type HeartbeatStream struct {
	body   *io.PipeWriter
	cancel context.CancelFunc
	done   chan struct{} // closed when the answer ended; err says why
	// lines go to the request body through writeLines, so that a beat never waits for
	// the transport: a body write blocks while the connection does not take it.
	lines     chan []byte
	writeDone chan struct{}
	closeOnce sync.Once
	acks      chan struct{} // one per acknowledgement, dropped when nobody waits

	mu       sync.Mutex
	err      error
	lastAck  time.Time     // when the last acknowledgement came
	owed     time.Time     // when a beat was sent that must be acknowledged; zero: none owed
	interval time.Duration // the interval the server last asked for (0: none)
}

// AgentHeartbeats opens node's heartbeat stream. Its errors are those of a call: a 404
// when the node was deleted, a transport error or 502-504 when the server cannot serve.
func (c *Client) AgentHeartbeats(ctx context.Context, node string) (*HeartbeatStream, error) {
	sctx, cancel := context.WithCancel(ctx)
	var pw *io.PipeWriter
	// Go's transport does not return from a failed round trip until it stopped reading
	// the request body, and this body is a pipe that gets its first line only once the
	// answer came: a connection that breaks before the answer (a server that stops)
	// would hold the call, and the agent's shutdown, forever. The pipes are closed when
	// ctx ends, and when no answer came within beatStreamAnswerWait.
	unblock := &pipeCloser{}
	defer context.AfterFunc(sctx, func() { unblock.closeAll(context.Cause(sctx)) })()
	noAnswer := time.AfterFunc(beatStreamAnswerWait, func() {
		unblock.expire(fmt.Errorf("heartbeat stream: no answer from the server within %s", beatStreamAnswerWait))
	})
	defer noAnswer.Stop()
	resp, err := c.roundTrip(sctx, http.MethodPost, agentNodePath(node)+"/heartbeats", func(base *url.URL) (*http.Request, error) {
		u := *base
		u.Path = base.Path + agentNodePath(node) + "/heartbeats"
		pr, w := io.Pipe()
		pw = w
		unblock.add(w)
		req, err := http.NewRequestWithContext(sctx, http.MethodPost, u.String(), pr)
		if err != nil {
			return nil, err
		}
		req.ContentLength = -1 // a stream: chunked, headers sent at once
		// Over HTTP/1.1 the connection ends with the stream. It also keeps a server that
		// answers an error before reading the body from waiting for the body's end first.
		// Over HTTP/2 the stream ends alone (the server resets it), and the connection
		// carries the agent's other calls: asking to close it would make every later
		// call open one of its own.
		req.Close = !multiplexes(c.http.Transport)
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Accept", "application/x-ndjson")
		return req, nil
	})
	answered := unblock.answer()
	if err != nil {
		cancel()
		return nil, err
	}
	if !answered { // the pipe was closed as the answer came: this stream is of no use
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("heartbeat stream: no answer from the server within %s", beatStreamAnswerWait)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		cancel()
		pw.Close()
		return nil, decodeError(resp)
	}
	s := &HeartbeatStream{body: pw, cancel: cancel, done: make(chan struct{}), lastAck: time.Now(),
		lines: make(chan []byte, 1), writeDone: make(chan struct{}), acks: make(chan struct{}, 1)}
	go s.readAcks(resp) // ends when the answer does: at the latest when Close cancels it
	go s.writeLines()   // ends when Close closes lines and the body
	return s, nil
}

// writeLines writes the beats to the request body until Close.
func (s *HeartbeatStream) writeLines() {
	defer close(s.writeDone)
	for line := range s.lines {
		if _, err := s.body.Write(line); err != nil {
			s.end(fmt.Errorf("heartbeat stream: %w", err))
			for range s.lines { // drop the rest until Close
			}
			return
		}
	}
}

// readAcks takes the acknowledgements until the answer ends; an error line ends it.
func (s *HeartbeatStream) readAcks(resp *http.Response) {
	defer close(s.done)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 256), maxErrorBody)
	for lines.Scan() {
		// An acknowledgement may say the interval to beat at (v4.HeartbeatAck); an
		// earlier server's says nothing ({}).
		var line struct {
			v4.ErrorBody
			v4.HeartbeatAck
		}
		if err := json.Unmarshal(lines.Bytes(), &line); err != nil {
			s.end(fmt.Errorf("heartbeat stream: an answer line is not JSON: %w", err))
			return
		}
		if e := line.Error; e != nil {
			s.end(&APIError{Status: e.Code, Reason: e.Reason, Message: e.Message, Details: e.Details})
			return
		}
		s.mu.Lock()
		s.lastAck, s.owed = time.Now(), time.Time{}
		// None (an earlier server, or one at its floor): the agent's own. A server asks
		// for the ceiling at most: more is taken as the ceiling, and never multiplied
		// into a duration that overflows.
		s.interval = time.Duration(min(max(0, line.IntervalSeconds), int(v4.MaxHeartbeatInterval/time.Second))) * time.Second
		s.mu.Unlock()
		select {
		case s.acks <- struct{}{}:
		default:
		}
	}
	err := lines.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	s.end(fmt.Errorf("heartbeat stream ended: %w", err))
}

// end records why the stream ended (the first reason wins).
func (s *HeartbeatStream) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// Beat sends one beat; it never waits on the network. It fails with the reason the
// stream ended, when the server owes an acknowledgement for longer than it may, or when
// the last beat is still unwritten; the stream is then of no more use (Close it).
func (s *HeartbeatStream) Beat(hb v4.AgentHeartbeat) error {
	now := time.Now()
	s.mu.Lock()
	err := s.err
	if err == nil && !s.owed.IsZero() && now.Sub(s.owed) > heartbeatAckWait {
		err = fmt.Errorf("heartbeat stream: no acknowledgement from the server for %s", now.Sub(s.lastAck).Round(time.Second))
	}
	// A beat this long after the last acknowledgement is due one (a second of slack
	// for the two clocks' views of when that acknowledgement was sent).
	if err == nil && s.owed.IsZero() && now.Sub(s.lastAck) > v4.HeartbeatAckEvery+time.Second {
		s.owed = now
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	line, err := json.Marshal(hb)
	if err != nil {
		return fmt.Errorf("encode heartbeat: %w", err)
	}
	select {
	case s.lines <- append(line, '\n'):
		return nil
	default:
		// The last beat is still not written: the connection takes nothing.
		return ErrHeartbeatStreamStuck
	}
}

// Interval is the interval the server's last acknowledgement asked this stream's beats
// to come at (docs/agent.md, "Heartbeat interval and node TTL"), 0 when it asked for
// none (an earlier server, or a cluster small enough for every agent's own interval).
func (s *HeartbeatStream) Interval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interval
}

// BeatAndWait sends a beat the server acknowledges (a stream's first) and waits for the
// acknowledgement, or the stream's end (its error), or ctx.
func (s *HeartbeatStream) BeatAndWait(ctx context.Context, hb v4.AgentHeartbeat) error {
	if err := s.Beat(hb); err != nil {
		return err
	}
	select {
	case <-s.acks:
		return nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	case <-ctx.Done():
		return fmt.Errorf("heartbeat stream: no acknowledgement of the first beat: %w", ctx.Err())
	}
}

// beatStreamAnswerWait bounds the wait for the answer's headers when a stream opens (a
// var for tests).
var beatStreamAnswerWait = 15 * time.Second

// pipeCloser closes the request body pipes of a stream's attempts, once: when the
// stream's context ends (its Close included), or when the answer is late.
type pipeCloser struct {
	mu       sync.Mutex
	pipes    []*io.PipeWriter
	closed   bool
	answered bool // the answer came: a late expire closes nothing
}

func (p *pipeCloser) add(w *io.PipeWriter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.CloseWithError(errStreamClosed)
		return
	}
	p.pipes = append(p.pipes, w)
}

// answer records that the answer came and reports whether the pipes are still open.
func (p *pipeCloser) answer() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answered = true
	return !p.closed
}

// expire closes the pipes unless the answer came first (the late-answer timer).
func (p *pipeCloser) expire(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.answered {
		p.closeLocked(err)
	}
}

// closeAll closes the pipes (the stream's context ended).
func (p *pipeCloser) closeAll(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked(err)
}

func (p *pipeCloser) closeLocked(err error) {
	p.closed = true
	for _, w := range p.pipes {
		w.CloseWithError(err)
	}
}

// Close ends the stream and waits for its reader and writer.
func (s *HeartbeatStream) Close() error {
	s.closeOnce.Do(func() {
		s.end(errStreamClosed)
		s.body.Close() // a write in progress fails now
		close(s.lines)
		s.cancel()
	})
	<-s.writeDone
	<-s.done
	return nil
}

// ErrHeartbeatStreamStuck is Beat's error when the last beat is still unwritten.
var ErrHeartbeatStreamStuck = errors.New("heartbeat stream: the connection takes no more beats")

// errStreamClosed is what Beat returns after Close.
var errStreamClosed = errors.New("heartbeat stream closed")
