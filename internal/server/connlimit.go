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
// waits for one to close and new connections wait in the kernel's backlog. One source
// address holds at most perSource of them: its next connections are closed at once, so
// a single client (a slowloris, a runaway script) cannot lock everyone else out. It
// warns at most once a minute while full, or while a source is at its share.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	perSource int
	log       *slog.Logger
	warned    atomic.Int64 // unix seconds of the last warning

	mu      sync.Mutex
	sources map[string]int
}

func newLimitListener(ln net.Listener, n, perSource int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), perSource: perSource, log: log, sources: map[string]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.slots <- struct{}{}:
		default:
			l.warn("the API's connection limit is reached; new connections wait (--max-connections)", "limit", cap(l.slots))
			l.slots <- struct{}{}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		src := sourceAddr(c.RemoteAddr())
		if !l.enter(src) {
			c.Close()
			<-l.slots
			l.warn("a source holds its share of the API's connections; its next ones are closed (--max-connections-per-source)",
				"source", src, "limit", l.perSource)
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.leave(src); <-l.slots }}, nil
	}
}

func (l *limitListener) warn(msg string, args ...any) {
	if now := time.Now().Unix(); now-l.warned.Load() >= 60 {
		l.warned.Store(now)
		l.log.Warn(msg, args...)
	}
}

func (l *limitListener) enter(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sources[src] >= l.perSource {
		return false
	}
	l.sources[src]++
	return true
}

func (l *limitListener) leave(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sources[src]--; l.sources[src] <= 0 {
		delete(l.sources, src)
	}
}

// sourceAddr is the host of a remote address (an IPv6 /64 counts as one source, as
// addresses within it are one client's to pick).
func sourceAddr(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return sourceIP(host)
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
