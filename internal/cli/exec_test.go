package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/execstream"
)

// serveExec answers an exec upgrade like an agent, running run.
func serveExec(run execstream.RunFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + execstream.Protocol + "\r\n\r\n")
		brw.Flush()
		execstream.Serve(context.Background(), conn, brw.Reader, run)
	}
}

func TestExecCommand(t *testing.T) {
	f, url := newFakeAPI(t)
	const route = "POST /v1/namespaces/ns-a/taskgroups/0.web/exec"
	f.routes[route] = serveExec(func(_ context.Context, stdin io.Reader, stdout io.Writer, _ <-chan v4.TermSize) (int, error) {
		b, _ := io.ReadAll(stdin)
		io.WriteString(stdout, "got "+string(b))
		return 3, nil
	})
	r := runCLI(t, url, "typed", "exec", "0.web", "-n", "ns-a", "-it", "-t", "side", "--", "sh", "-c", "exit 3")
	var ee *ExitError
	if !errors.As(r.err, &ee) || ee.Code != 3 || r.stdout != "got typed" {
		t.Fatalf("exec: %v %q", r.err, r.stdout)
	}
	want := route + "?cmd=sh&cmd=-c&cmd=exit+3&task=side&tty=true"
	if got := f.got(); !slices.Equal(got, []string{want}) {
		t.Errorf("requests = %v, want %s", got, want)
	}

	// Without -i no input is sent; exit 0 is success.
	f.reset()
	f.routes[route] = serveExec(func(_ context.Context, stdin io.Reader, stdout io.Writer, _ <-chan v4.TermSize) (int, error) {
		b, _ := io.ReadAll(stdin)
		io.WriteString(stdout, "input:"+string(b))
		return 0, nil
	})
	r = runCLI(t, url, "typed", "exec", "0.web", "-n", "ns-a", "--", "env")
	if r.err != nil || r.stdout != "input:" {
		t.Fatalf("exec without -i: %v %q", r.err, r.stdout)
	}
	if got := f.got(); !slices.Equal(got, []string{route + "?cmd=env"}) {
		t.Errorf("requests = %v", got)
	}

	// A command that cannot run, and API errors before the upgrade.
	f.routes[route] = serveExec(func(context.Context, io.Reader, io.Writer, <-chan v4.TermSize) (int, error) {
		return 0, errors.New("task nope: not found")
	})
	if r := runCLI(t, url, "", "exec", "0.web", "-n", "ns-a", "--", "true"); r.err == nil || r.err.Error() != "task nope: not found" {
		t.Errorf("run error: %v", r.err)
	}
	f.json(route, http.StatusNotFound, `{"error":{"code":404,"reason":"NotFound","message":"task group ns-a/0.web not found"}}`)
	if r := runCLI(t, url, "", "exec", "0.web", "-n", "ns-a", "--", "true"); r.err == nil || !strings.Contains(r.err.Error(), "not found") {
		t.Errorf("404: %v", r.err)
	}
}

func TestExecUsage(t *testing.T) {
	_, url := newFakeAPI(t)
	for _, args := range [][]string{{"exec", "0.web"}, {"exec", "0.web", "env"}, {"exec", "--", "env"}, {"exec", "0.web", "--"}} {
		if r := runCLI(t, url, "", args...); r.err == nil || !strings.Contains(r.err.Error(), "usage: berth exec") {
			t.Errorf("%v: %v", args, r.err)
		}
	}
	if r := runCLI(t, url, "", "exec", "--bogus", "0.web", "--", "env"); r.err == nil || !strings.Contains(r.err.Error(), "unknown flag") {
		t.Errorf("unknown flag: %v", r.err)
	}
	if r := runCLI(t, url, "", "exec", "--help"); r.err != nil || !strings.Contains(r.stdout, "-it both") {
		t.Errorf("help: %v %q", r.err, r.stdout)
	}
	if got := expandIT([]string{"-ti", "tg", "--", "-it"}); !slices.Equal(got, []string{"-i", "--tty", "tg", "--", "-it"}) {
		t.Errorf("expandIT = %v", got)
	}
}
