package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/execstream"
)

// execAgent is an agent whose exec runs a fake command: it echoes each line of input
// upper-cased, reports each terminal size, and ends with code 3 at the line "exit".
type execAgent struct {
	mu    sync.Mutex
	query string
}

func (a *execAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/exec") || r.Header.Get("Upgrade") != execstream.Protocol {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	a.query = r.URL.RawQuery
	a.mu.Unlock()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", execstream.Protocol)
	brw.Flush()
	execstream.Serve(context.Background(), conn, brw.Reader, func(ctx context.Context, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
		go func() {
			for s := range resize {
				fmt.Fprintf(stdout, "size %dx%d\n", s.Rows, s.Cols)
			}
		}()
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if sc.Text() == "exit" {
				return 3, nil
			}
			fmt.Fprintln(stdout, strings.ToUpper(sc.Text()))
		}
		return 0, nil
	})
}

// bcs-client exec: create_exec finds the task by its container ID and answers Docker's
// {"Id"}; start_exec is a WebSocket over berth's exec stream (the task, a terminal, the
// command); resize_exec reaches the session; the command's end closes the WebSocket. A
// token of another namespace finds no container, and cannot start an exec in it.
func TestBCSExec(t *testing.T) {
	agent := &execAgent{}
	addr := serveFakeAgent(t, agent, testCA(t), "n1")
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	heartbeatAt(t, url, "n1", addr)
	const container = "c0ffee0123456789abcdef"
	putTaskGroup(t, "ex", "0.web.ex.c.1", "n1", func(tg *v4.TaskGroup) {
		tg.Status.Phase = v4.StatusRunning
		tg.Status.Tasks = []v4.TaskStatus{{Name: "web", Status: v4.StatusRunning, Info: v4.ContainerInfo{ID: container}}}
	})
	base := url + bcs.GatewayPrefix + "/webconsole"
	// Namespaces are listed by what they hold: a configmap makes ex one.
	wantBCS(t, bcsCall(t, http.MethodPost, url+bcs.GatewayPrefix+"/namespaces/ex/configmaps", cmJSON("ex", "cfg", "aGk="), ""), 0)

	// create_exec answers Docker's shape, not the envelope; a short ID finds it too.
	r := callWith(t, "", http.MethodPost, base+"/create_exec?host_ip=10.0.0.1", `{"container_id":"c0ffee012345","cmd":["sh","-i"]}`, "",
		http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}})
	var created struct{ Id string }
	if r.code != http.StatusOK || json.Unmarshal(r.body, &created) != nil || created.Id == "" {
		t.Fatalf("create_exec: %d %s", r.code, r.body)
	}

	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots}, HandshakeTimeout: 5 * time.Second}
	header := http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Authorization": {"Bearer " + adminToken}}
	wsURL := "wss" + strings.TrimPrefix(base, "https") + "/start_exec?host_ip=10.0.0.1&container_id=" + container + "&exec_id=" + created.Id
	ws, _, err := dialer.Dial(wsURL, header)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	agent.mu.Lock()
	if agent.query != "cmd=sh&cmd=-i&task=web&tty=true" {
		t.Errorf("the agent's exec: %q", agent.query)
	}
	agent.mu.Unlock()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	read := func(want string) {
		t.Helper()
		_, msg, err := ws.ReadMessage()
		if err != nil || string(msg) != want {
			t.Fatalf("output %q %v, want %q", msg, err, want)
		}
	}
	ws.WriteMessage(websocket.BinaryMessage, []byte("hello\n"))
	read("HELLO\n")
	a := bcsCall(t, http.MethodPost, base+"/resize_exec?host_ip=10.0.0.1", `{"exec_id":"`+created.Id+`","height":40,"width":120}`, "")
	wantBCS(t, a, 0)
	read("size 40x120\n")
	ws.WriteMessage(websocket.TextMessage, []byte("exit\n"))
	_, _, err = ws.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseNormalClosure {
		t.Fatalf("after the command's end: %v", err)
	}
	a = bcsCall(t, http.MethodPost, base+"/resize_exec", `{"exec_id":"`+created.Id+`","height":40,"width":120}`, "")
	if a.status != http.StatusNotFound || a.Code != bcs.CodeNotFound {
		t.Errorf("resize of an ended session: %d %+v", a.status, a)
	}

	other := tokenWithPolicy(t, url, `{"kind":"acl-policy","metadata":{"name":"other-ex"},"rules":[{"namespaces":["other"],"kinds":["*"],"verbs":["*"]}]}`, "other-ex", "")
	a = bcsCall(t, http.MethodPost, base+"/create_exec?host_ip=10.0.0.1", `{"container_id":"`+container+`","cmd":["sh"]}`, other)
	if a.status != http.StatusNotFound || a.Code != bcs.CodeNotFound {
		t.Errorf("create_exec with another namespace's token: %d %+v", a.status, a)
	}
	_, resp, err := dialer.Dial(wsURL, http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Authorization": {"Bearer " + other}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("start_exec with another namespace's token: %v %v", err, resp)
	}
	for _, c := range []struct{ path, body string }{
		{"/create_exec", `{"cmd":["sh"]}`},
		{"/create_exec", `{"container_id":"x","cmd":[]}`},
		{"/resize_exec", `{"exec_id":"x","height":0,"width":80}`},
	} {
		if a := bcsCall(t, http.MethodPost, base+c.path, c.body, ""); a.Code != bcs.CodeBadRequestData {
			t.Errorf("%s %s: %+v", c.path, c.body, a)
		}
	}
	if a := bcsCall(t, http.MethodGet, base+"/start_exec?exec_id=bm90LWpzb24", "", ""); a.Code != bcs.CodeDriverParameter {
		t.Errorf("a bad exec_id: %+v", a)
	}
}
