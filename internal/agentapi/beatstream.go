package agentapi

import (
	"github.com/berthhq/berth/internal/httpapi"

	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// An agent sends its heartbeats on one long-lived request (docs/agent.md, Heartbeats):
// POST /v1/agent/nodes/{name}/heartbeats, whose body is a line of JSON per beat (an
// AgentHeartbeat) and whose answer is a line per acknowledgement. A beat on the stream
// costs the server one read and a map update; a beat as its own HTTPS request cost a
// request's parsing, routing, authentication and answer each time, which at 5,000
// nodes was most of the server's idle CPU.
//
// The server acknowledges the first beat and then at most one beat every beatAckEvery,
// so the agent knows the server still listens without a write per beat, and at once when
// the agent's interval changes: an acknowledgement carries the interval the agent is to
// beat at (pace.go), written from bytes encoded when it changed. A beat allocates
// nothing on the server in the common case (an empty line). An error ends
// the stream with one line in the shape of an error answer ({"error": {...}}), and the
// agent opens another stream, to another server if this one cannot serve.

const (
	// beatAckEvery is how long the server waits before acknowledging another beat.
	beatAckEvery = v4.HeartbeatAckEvery
	// beatStreamIdle ends a stream on which no beat came for that long: three beats
	// missed at the longest interval an agent is told (v4.MaxHeartbeatInterval).
	beatStreamIdle = 3 * v4.MaxHeartbeatInterval
	// MaxBeatLine bounds one beat's line.
	MaxBeatLine = 4 << 10
	// MinBeatGap is the least time between two beats the server takes from one stream:
	// an agent sending faster is slowed down, not served.
	MinBeatGap = 250 * time.Millisecond
)

// handleAgentHeartbeats serves a node's heartbeat stream.
func (a *API) handleAgentHeartbeats(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	rc := http.NewResponseController(w)
	// The answer streams while the body is read (HTTP/1.1 would otherwise end the body
	// at the first write).
	if err := rc.EnableFullDuplex(); err != nil {
		return httpapi.Errorf(http.StatusInternalServerError, "heartbeat stream: %v", err)
	}
	// A full-duplex handler that returns with the body unread makes net/http's next
	// read of the connection panic (golang/go#68560): the body is closed first.
	defer r.Body.Close()
	ctx, cancel := httpapi.StreamContext(a.streams, r)
	defer cancel()
	live, unregister := a.beatStreams.open(name, cancel)
	defer unregister()
	defer endReadsWith(ctx, rc, live)()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return nil
	}
	lines := bufio.NewScanner(r.Body)
	lines.Buffer(make([]byte, 0, 256), MaxBeatLine)
	st := &beatState{}
	for {
		// No deadline: a silent stream is ended by the sweep (beatstreams.go).
		if !lines.Scan() {
			if errors.Is(lines.Err(), bufio.ErrTooLong) {
				a.endBeatStream(w, r, rc, httpapi.Errorf(http.StatusRequestEntityTooLarge, "a heartbeat is over the limit of %d bytes", MaxBeatLine))
			}
			if live.replaced.Load() {
				a.endBeatStream(w, r, rc, httpapi.Errorf(http.StatusConflict, "another heartbeat stream of node %s replaced this one", name))
			}
			return nil // the agent closed the stream, went silent, or the server is closing
		}
		live.beat(time.Now())
		if !a.takeBeat(ctx, w, r, rc, name, lines.Bytes(), st) {
			return nil
		}
	}
}

// beatState is what one heartbeat stream keeps from a beat to the next.
type beatState struct {
	lastAck, lastBeat time.Time
	pace              handover
	ack               []byte // the acknowledgement line, with the interval last told
}

// takeBeat serves one beat of the stream: at most one every minBeatGap, the node's lease
// renewed (its TTL following the interval the agent is told), and an acknowledgement when
// one is due. It returns false when the stream ends (an answer line was written if the
// agent is to hear why).
func (a *API) takeBeat(ctx context.Context, w http.ResponseWriter, r *http.Request, rc *http.ResponseController, name string, line []byte, st *beatState) bool {
	if wait := a.minBeatGap - time.Since(st.lastBeat); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		}
	}
	st.lastBeat = time.Now()
	// Most beats say nothing but that the agent lives: "{}" needs no decoder, and
	// no heartbeat on the heap (one decoded into escapes).
	var hb v4.AgentHeartbeat
	if len(line) > 0 && string(line) != "{}" {
		decoded := new(v4.AgentHeartbeat)
		if err := httpapi.DecodeStrict(line, decoded); err != nil {
			a.endBeatStream(w, r, rc, httpapi.Errorf(http.StatusBadRequest, "the line is not a heartbeat: %v", err))
			return false
		}
		hb = *decoded
	}
	// Until the node cache has the cluster (a server just started, as in a
	// failover), nothing changes: the agent keeps its interval and the node's lease
	// its TTL, instead of every lease moving to the floor's and back.
	tell, counted := false, a.nodesCounted()
	lo, hi, shrink := a.nodeTTL, a.nodeTTL, false
	var want time.Duration
	if counted {
		want = a.pace.Interval(a.nodeCache.Len())
		tell, lo, hi, shrink = st.pace.next(a.pace, want)
	}
	if err := a.beat(ctx, name, hb, hi); err != nil {
		a.endBeatStream(w, r, rc, err)
		return false
	}
	// A longer interval's TTL is on the lease before the agent hears of it.
	if counted {
		if err := a.store.SetLeaseTTL(ctx, name, lo, hi, shrink); err != nil {
			a.endBeatStream(w, r, rc, httpapi.Errorf(http.StatusServiceUnavailable, "heartbeat: %v", err))
			return false
		}
	}
	switch {
	case tell:
		st.ack = appendAck(st.ack[:0], want, a.pace.Floor)
	case time.Since(st.lastAck) < beatAckEvery:
		return true
	case len(st.ack) == 0:
		st.ack = append(st.ack, "{}\n"...) // no interval told yet: the agent's own
	}
	st.lastAck = time.Now()
	return writeBeatBytes(w, rc, st.ack)
}

// endReadsWith makes the end of ctx (the stream replaced or swept, the server closing)
// end the body's reads, which otherwise wait for the agent, and returns what the handler
// defers to stop that. A stream the sweep ended also gets a past write deadline: its
// handler may be stuck writing to an agent that does not read (over HTTP/2 that resets
// the stream). Past deadlines take effect at once and start no timer. They are never set
// once the handler returned: over HTTP/2 a finished stream's ResponseController is gone
// (setting it panics), and a stream ended by another that replaced it or by the server
// closing may be returning as the deadline is set.
func endReadsWith(ctx context.Context, rc *http.ResponseController, live *liveBeatStream) (release func()) {
	var mu sync.Mutex
	returned := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !returned {
			now := time.Now()
			rc.SetReadDeadline(now)
			if live.idled.Load() {
				rc.SetWriteDeadline(now)
			}
		}
	})
	return func() {
		stop()
		mu.Lock()
		returned = true
		mu.Unlock()
	}
}

// nodesCounted reports whether the node cache holds the cluster's nodes (it synced once).
func (a *API) nodesCounted() bool {
	select {
	case <-a.nodeCache.Synced():
		return true
	default:
		return false
	}
}

// appendAck appends the acknowledgement line that tells interval to b. At the floor it
// tells none ({}): the agent beats at its own interval, which may be shorter (a cluster
// with a short --node-ttl).
func appendAck(b []byte, interval, floor time.Duration) []byte {
	if interval <= floor {
		return append(b, "{}\n"...)
	}
	b = append(b, `{"intervalSeconds":`...)
	b = strconv.AppendInt(b, int64(interval/time.Second), 10)
	return append(b, "}\n"...)
}

// endBeatStream writes err as the stream's last line.
func (a *API) endBeatStream(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, err error) {
	ae := httpapi.FromError(err)
	if ae.Code >= 500 {
		a.log.Error("heartbeat stream failed", "node", r.PathValue("name"), "code", ae.Code, "err", err)
	}
	writeBeatLine(w, rc, v4.ErrorBody{Error: (*v4.Status)(ae)})
}

// writeBeatLine writes one line of the answer and flushes it; false when it failed.
func writeBeatLine(w http.ResponseWriter, rc *http.ResponseController, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return writeBeatBytes(w, rc, append(b, '\n'))
}

// writeBeatBytes writes line (ending in a newline) and flushes it; false when it failed.
// It sets no write deadline (two timer changes and two messages to the connection's
// goroutine per acknowledgement): a write stuck on an agent that does not read is ended
// by the sweep (beatstreams.go).
func writeBeatBytes(w http.ResponseWriter, rc *http.ResponseController, line []byte) bool {
	if _, err := w.Write(line); err != nil {
		return false
	}
	return rc.Flush() == nil
}
