package bcs

import (
	"crypto/sha256"
	"net/http"
	"sync"
)

// resize_exec comes on a request of its own, naming the session by its exec ID: the
// sessions start_exec opened are kept here, each with who opened it, until they end.

// credential identifies who started a session, so only they resize it: a digest of the
// Authorization header and of the client certificate, whichever the request had.
type credential [sha256.Size]byte

func credentialOf(r *http.Request) credential {
	h := sha256.New()
	h.Write([]byte(r.Header.Get("Authorization")))
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		h.Write(r.TLS.PeerCertificates[0].Raw)
	}
	var c credential
	h.Sum(c[:0])
	return c
}

// maxExecSessions bounds the sessions resize_exec can find, so the registry cannot grow
// at will (sessions of one exec ID count each); one over it still runs, without resizes.
const maxExecSessions = 1024

// execSessions are the started sessions by exec ID, for resize_exec.
type execSessions struct {
	mu   sync.Mutex
	byID map[string][]*registered
	n    int // sessions in byID
}

type registered struct {
	who credential
	s   *execSession
}

// add registers s and returns its removal.
func (e *execSessions) add(id string, who credential, s *execSession) func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = map[string][]*registered{}
	}
	if e.n >= maxExecSessions {
		return func() {}
	}
	reg := &registered{who: who, s: s}
	e.byID[id] = append(e.byID[id], reg)
	e.n++
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		list := e.byID[id]
		for i, x := range list {
			if x == reg {
				list = append(list[:i], list[i+1:]...)
				e.n--
				break
			}
		}
		if len(list) == 0 {
			delete(e.byID, id)
		} else {
			e.byID[id] = list
		}
	}
}

// find returns the latest session of id that who started.
func (e *execSessions) find(id string, who credential) *execSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	list := e.byID[id]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].who == who {
			return list[i].s
		}
	}
	return nil
}
