package stepio

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// fetchProxy is an HTTP proxy on loopback that git is told to use for the length of one
// clone: every connection git makes goes through the policy's dialer, so the address
// checks apply to git as to the agent's own fetches (curl, which git uses, resolves and
// connects on its own otherwise). It asks for a one-time credential, so that other
// programs of the node cannot use it meanwhile.
type fetchProxy struct {
	ln    net.Listener
	srv   *http.Server
	auth  string // the Proxy-Authorization value expected
	user  string // user:password for the proxy URL
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	tr    *http.Transport
	ctx   context.Context
	stop  context.CancelFunc
	conns sync.WaitGroup // tunnels
	serve sync.WaitGroup // the Serve goroutine
	// left is what may still come from the remotes, all connections together; over
	// says it ran out (the clone failed for its size).
	left atomic.Int64
	over atomic.Bool
}

// countedReader reads r, counting what comes from a remote against the proxy's bound.
type countedReader struct {
	r  io.Reader
	fp *fetchProxy
}

// errFetchBound ends a connection past the proxy's bound.
var errFetchBound = errors.New("more than the bound on what a git input may download")

func (c countedReader) Read(p []byte) (int, error) {
	if c.fp.left.Load() < 0 {
		return 0, errFetchBound
	}
	n, err := c.r.Read(p)
	if c.fp.left.Add(-int64(n)) < 0 {
		c.fp.over.Store(true)
		return n, errFetchBound
	}
	return n, err
}

// startProxy starts a proxy that lives until close (or ctx ends) and passes at most
// limit bytes from the remotes.
func (p *Policy) startProxy(ctx context.Context, limit int64) (*fetchProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read does not fail
	user := "berth:" + hex.EncodeToString(b)
	ctx, stop := context.WithCancel(ctx)
	d := p.Dialer()
	fp := &fetchProxy{
		ln: ln, user: user, auth: "Basic " + base64.StdEncoding.EncodeToString([]byte(user)),
		dial: d.DialContext, ctx: ctx, stop: stop,
		tr: &http.Transport{Proxy: nil, DialContext: d.DialContext, DisableKeepAlives: true, ResponseHeaderTimeout: time.Minute},
	}
	fp.left.Store(limit)
	fp.srv = &http.Server{Handler: fp, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	fp.serve.Go(func() { fp.srv.Serve(ln) }) //nolint:errcheck // ends with close
	return fp, nil
}

// url is the proxy's URL, with its credential.
func (fp *fetchProxy) url() string { return "http://" + fp.user + "@" + fp.ln.Addr().String() }

// close stops the proxy and waits for its tunnels to end.
func (fp *fetchProxy) close() {
	fp.stop()
	fp.srv.Close()
	fp.tr.CloseIdleConnections()
	fp.conns.Wait()
	fp.serve.Wait()
}

func (fp *fetchProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Proxy-Authorization") != fp.auth {
		w.Header().Set("Proxy-Authenticate", `Basic realm="berth"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		fp.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "only absolute http URLs and CONNECT", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	resp, err := fp.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, countedReader{r: resp.Body, fp: fp}) //nolint:errcheck // the client sees a short body
}

// tunnel serves CONNECT: the target is dialled through the policy, then bytes are
// copied both ways until either side ends or the proxy closes.
func (fp *fetchProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	target, err := fp.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, ErrRefused) {
			code = http.StatusForbidden
		}
		http.Error(w, err.Error(), code)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		target.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		target.Close()
		return
	}
	fp.conns.Add(1)
	defer fp.conns.Done()
	closeBoth := func() { client.Close(); target.Close() }
	defer context.AfterFunc(fp.ctx, closeBoth)()
	defer closeBoth()
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(target, buf) //nolint:errcheck // a tunnel ends with either side
		if tc, ok := target.(*net.TCPConn); ok {
			tc.CloseWrite() //nolint:errcheck // best effort half-close
		}
	}()
	io.Copy(client, countedReader{r: target, fp: fp}) //nolint:errcheck // a tunnel ends with either side
	closeBoth()
	<-done
}
