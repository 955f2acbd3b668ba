package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve serves the API on ln over TLS, its connections bounded (connlimit.go), and, when
// plain is not nil, without TLS on plain (a loopback listener, for development), until
// ctx ends or serving fails. It then ends the watch streams, shuts the HTTP server down
// gracefully (up to 5 s) and returns; the listeners are closed by then.
func (s *Server) Serve(ctx context.Context, ln, plain net.Listener) error {
	httpSrv := s.httpServer(s.log)
	s.webhooks.own.listening(ln.Addr()) // no admission webhook is the API itself
	if plain != nil {
		s.webhooks.own.listening(plain.Addr())
	}
	serveErr := make(chan error, 2)
	serving := 1 // listeners served, each ending with one value on serveErr
	limited := newLimitListener(ln, s.maxConns, s.maxConnsPerSource, s.log)
	go func() { serveErr <- httpSrv.Serve(tls.NewListener(limited, s.TLSConfig())) }()
	if plain != nil {
		serving++
		go func() { serveErr <- httpSrv.Serve(plain) }()
	}
	select {
	case err := <-serveErr:
		serving--
		httpSrv.Close()
		for range serving {
			<-serveErr
		}
		return fmt.Errorf("server: serve: %w", err)
	case <-ctx.Done():
	}
	// End watch streams first: they would otherwise hold Shutdown for the whole grace period.
	s.Close()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := httpSrv.Shutdown(shutCtx); err != nil {
		s.log.Warn("graceful shutdown incomplete", "err", err)
		httpSrv.Close()
	}
	for range serving {
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("server: serve: %w", err)
		}
	}
	return nil
}

// httpServer is the http.Server that serves the API: headers within ReadHeaderTimeout
// (which bounds the TLS handshake too), no WriteTimeout (watch streams last as long as
// the client stays), kept-alive connections closed after idleTimeout, and HTTP/2
// (agents, browsers) bounded: one connection carries at most h2Streams streams, and what its
// client may send before the server reads is bounded per stream and per connection, so
// one connection cannot take the server's memory; its HPACK tables are small (h2HeaderTable:
// a connection per agent holds them). It sends no HTTP/2 pings: a ping
// timer per connection, re-armed every minute, was a runtime timer per agent that the Go
// runtime walks with all the others (docs/benchmarks.md, "Timers"); a peer that vanished
// is found by TCP keepalive (on by default on the listener's connections: probes after 15 s
// idle), and a silent agent by its heartbeat stream's sweep.
func (s *Server) httpServer(log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       idleTimeout,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          h2Streams,
			MaxReceiveBufferPerStream:     h2StreamBuffer,
			MaxReceiveBufferPerConnection: h2ConnBuffer,
			MaxReadFrameSize:              1 << 14,
			MaxDecoderHeaderTableSize:     h2HeaderTable,
			MaxEncoderHeaderTableSize:     h2HeaderTable,
		},
		ConnState: s.ConnState,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
