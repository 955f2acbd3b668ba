// Package berthtest is what the suites that run the real berth binary (test/e2e and
// test/compat) share: the TestMain that builds it once, a loopback address for a server
// to listen on, and the transport that sends the cluster's management token.
package berthtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// quickExit is the race detector's options for the binaries the suites run (GORACE,
// unless set): a report in flight at exit gets 50 ms to be printed, not a second.
const quickExit = "atexit_sleep_ms=50"

// Main builds cmd/berth (with buildFlags, such as -race) into a new temporary directory
// named after pattern, sets *bin to it, runs the tests and exits with their code,
// removing the build first. Call it as the whole of a TestMain.
func Main(m *testing.M, bin *string, pattern string, buildFlags ...string) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "berth")
	args := append(append([]string{"build"}, buildFlags...), "-o", *bin, "github.com/berthhq/berth/cmd/berth")
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build berth:", err)
		os.Exit(1)
	}
	if _, set := os.LookupEnv("GORACE"); !set {
		// A binary built with -race sleeps a second before it exits (the race detector's
		// atexit_sleep_ms), so that another thread's report can be printed whole: every
		// CLI call of the suites would take a second longer. A report takes far less
		// than quickExit to print.
		os.Setenv("GORACE", quickExit)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// FreeAddr returns a loopback address free now for a server's --listen. It is taken from
// 10000-19999, below the kernel's ephemeral range (32768-60999) and the agents' port
// bands: a port from ":0" is free only until the server binds it, and the server's own
// embedded etcd, which binds ":0" ports first, could be handed the same one.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(10000))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr
	}
	t.Fatal("no free port in 10000-19999")
	return ""
}

// Bearer adds "Authorization: Bearer Token" to the requests that carry no Authorization
// of their own (on a clone: a RoundTripper must not change the caller's request).
type Bearer struct {
	Token string
	Next  http.RoundTripper
}

func (b *Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return b.Next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Next.RoundTrip(r)
}
