package server

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// seatWriter gives its seat back at the first byte, flush or hijack of the answer: a
// long-lived request's start is done then.
type seatWriter struct {
	http.ResponseWriter
	release func()
	once    sync.Once
}

func (w *seatWriter) done() { w.once.Do(w.release) }

func (w *seatWriter) WriteHeader(code int) {
	w.done()
	w.ResponseWriter.WriteHeader(code)
}

func (w *seatWriter) Write(b []byte) (int, error) {
	w.done()
	return w.ResponseWriter.Write(b)
}

// FlushError lets http.ResponseController's Flush end the start too.
func (w *seatWriter) FlushError() error {
	w.done()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for handlers that ask for an http.Flusher.
func (w *seatWriter) Flush() { w.FlushError() }

// Hijack ends the start of an exec or attach session: the connection is its own then.
func (w *seatWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.done()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *seatWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
