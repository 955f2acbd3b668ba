package server

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connReserve is how many file descriptors the server keeps for itself when it sizes its
// connection limit from RLIMIT_NOFILE: the embedded etcd's files and peers, the audit log,
// connections to agents for logs and exec.
const connReserve = 1024

// defaultMaxConnections is the API's connection limit when none is configured: the
// process's file descriptor limit less connReserve. Without a limit, thousands of agents
// or a flood of connections take every descriptor, and the embedded etcd, failing to open
// a snapshot file, stops the server.
func defaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 4096
	}
	return max(int(min(lim.Cur, 1<<30))-connReserve, 64)
}

// limitListener accepts at most cap(slots) connections at a time; beyond that, Accept
// waits for one to close and new connections wait in the kernel's backlog. It warns at
// most once a minute while full.
type limitListener struct {
	net.Listener
	slots  chan struct{}
	log    *slog.Logger
	warned atomic.Int64 // unix seconds of the last warning
}

func newLimitListener(ln net.Listener, n int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), log: log}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if now := time.Now().Unix(); now-l.warned.Load() >= 60 {
			l.warned.Store(now)
			l.log.Warn("the API's connection limit is reached; new connections wait (--max-connections)", "limit", cap(l.slots))
		}
		l.slots <- struct{}{}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// limitedConn gives its slot back once, on its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
