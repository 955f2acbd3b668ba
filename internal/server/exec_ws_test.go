package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/berthhq/berth/internal/execstream"
)

// TestExecWebSocketAuthorization: the console's terminal takes its token from the
// subprotocol, and everything that can be refused is refused before the upgrade, as a
// plain HTTP answer.
func TestExecWebSocketAuthorization(t *testing.T) {
	base := newTestServer(t, Config{})
	url := "wss" + strings.TrimPrefix(base, "https") + "/v1/namespaces/ns-a/taskgroups/nope/exec/ws?cmd=sh"
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots}, HandshakeTimeout: 5 * time.Second}
	bearer := func(tok string) string { return wsBearerPrefix + base64.RawURLEncoding.EncodeToString([]byte(tok)) }
	cases := []struct {
		name      string
		protocols []string
		want      int
	}{
		{"no token", []string{execstream.Protocol}, http.StatusUnauthorized},
		{"unknown token", []string{execstream.Protocol, bearer("berth-acl-abcdef.0123456789abcdef0123456789abcdef")}, http.StatusUnauthorized},
		{"not base64", []string{execstream.Protocol, wsBearerPrefix + "!!"}, http.StatusUnauthorized},
		// The management token passes; the task group does not exist.
		{"management token", []string{execstream.Protocol, bearer(adminToken)}, http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := dialer
			d.Subprotocols = c.protocols
			conn, resp, err := d.Dial(url, nil)
			if conn != nil {
				conn.Close()
			}
			if err == nil || resp == nil || resp.StatusCode != c.want {
				code := 0
				if resp != nil {
					code = resp.StatusCode
				}
				t.Fatalf("dial: %v, status %d, want %d", err, code, c.want)
			}
		})
	}
	r := call(t, "GET", base+"/v1/namespaces/ns-a/taskgroups/nope/exec/ws?cmd=sh", "")
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "WebSocket") {
		t.Errorf("a plain GET: %d %s", r.code, r.body)
	}
}

// relayPair runs relayExec between a WebSocket client (returned) and an agent's end of
// a pipe (returned), as the handler does after both connections are made.
func relayPair(t *testing.T) (*websocket.Conn, net.Conn) {
	t.Helper()
	agentSide, serverSide := net.Pipe()
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{Subprotocols: []string{execstream.Protocol}}
		ws, err := up.Upgrade(hijacker{w}, r, nil)
		if err != nil {
			return
		}
		defer close(done)
		relayExec(context.Background(), ws, serverSide)
	}))
	t.Cleanup(func() {
		agentSide.Close()
		<-done
		ts.Close()
	})
	client, _, err := (&websocket.Dialer{Subprotocols: []string{execstream.Protocol}}).Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client, agentSide
}

// TestExecRelay: frames go both ways whole; the agent's end closes the WebSocket
// normally; a frame a client must not send closes it with a policy violation, and the
// agent gets nothing of it.
func TestExecRelay(t *testing.T) {
	client, agent := relayPair(t)
	input := []byte{execstream.FrameStdin, 0, 0, 0, 3, 'l', 's', '\n'}
	if err := client.WriteMessage(websocket.BinaryMessage, input); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(input))
	if _, err := io.ReadFull(agent, got); err != nil || !bytes.Equal(got, input) {
		t.Fatalf("the agent got %v %v", got, err)
	}
	output := []byte{execstream.FrameStdout, 0, 0, 0, 2, 'o', 'k'}
	go agent.Write(output)
	typ, msg, err := client.ReadMessage()
	if err != nil || typ != websocket.BinaryMessage || !bytes.Equal(msg, output) {
		t.Fatalf("the browser got %d %v %v", typ, msg, err)
	}
	agent.Close()
	_, _, err = client.ReadMessage()
	if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != websocket.CloseNormalClosure {
		t.Errorf("after the agent's end: %v", err)
	}

	client, agent = relayPair(t)
	read := make(chan int, 1)
	go func() {
		n, _ := agent.Read(make([]byte, 64))
		read <- n
	}()
	if err := client.WriteMessage(websocket.BinaryMessage, []byte{execstream.FrameExit, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	_, _, err = client.ReadMessage()
	if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "not one a client sends") {
		t.Errorf("a forbidden frame: %v", err)
	}
	if n := <-read; n != 0 {
		t.Errorf("the agent got %d bytes of a forbidden frame", n)
	}
}
