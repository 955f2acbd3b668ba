package execstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// pair runs Serve with run on one end of a pipe and returns the other end.
func pair(t *testing.T, run RunFunc) (net.Conn, chan error) {
	t.Helper()
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), server, bufio.NewReader(server), run) }()
	t.Cleanup(func() { client.Close() })
	return client, done
}

func TestSessionCopiesInputOutputAndExit(t *testing.T) {
	gotSize := make(chan v4.TermSize, 1)
	client, served := pair(t, func(_ context.Context, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
		// Input frames come first and block on a command that does not read them, as
		// with any pipe: read the input, then the size that followed.
		b, err := io.ReadAll(stdin)
		if err != nil {
			return 1, err
		}
		gotSize <- <-resize
		io.WriteString(stdout, strings.ToUpper(string(b)))
		return 42, nil
	})
	resize := make(chan v4.TermSize, 1)
	resize <- v4.TermSize{Rows: 24, Cols: 80}
	var out bytes.Buffer
	code, err := Attach(context.Background(), client, strings.NewReader(strings.Repeat("ab", 40000)), &out, resize)
	if err != nil || code != 42 {
		t.Fatalf("attach = %d %v", code, err)
	}
	if out.String() != strings.Repeat("AB", 40000) {
		t.Errorf("output of %d bytes", out.Len())
	}
	if s := <-gotSize; s.Rows != 24 || s.Cols != 80 {
		t.Errorf("size = %+v", s)
	}
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestSessionReportsRunError(t *testing.T) {
	client, _ := pair(t, func(context.Context, io.Reader, io.Writer, <-chan v4.TermSize) (int, error) {
		return 0, errors.New("task side: not found")
	})
	code, err := Attach(context.Background(), client, nil, io.Discard, nil)
	if err == nil || err.Error() != "task side: not found" || code != 0 {
		t.Fatalf("attach = %d %v", code, err)
	}
}

func TestClientLeavingEndsTheCommand(t *testing.T) {
	ended := make(chan struct{})
	client, served := pair(t, func(ctx context.Context, _ io.Reader, stdout io.Writer, _ <-chan v4.TermSize) (int, error) {
		io.WriteString(stdout, "started\n")
		<-ctx.Done()
		close(ended)
		return 137, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	out := &notifyWriter{ch: make(chan struct{}, 1)}
	go func() { <-out.ch; cancel() }()
	if _, err := Attach(ctx, client, nil, out, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("attach = %v", err)
	}
	for _, ch := range []<-chan struct{}{ended} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("the command did not end")
		}
	}
	<-served
}

type notifyWriter struct{ ch chan struct{} }

func (w *notifyWriter) Write(p []byte) (int, error) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}
