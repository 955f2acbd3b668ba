package compat

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

// bcs-client exec as it runs it against the real binary and agent: storage's task group
// for the container ID, create_exec for an exec ID, then start_exec's WebSocket, whose
// messages are the command's output until its end closes it.
func TestBCSExec(t *testing.T) {
	b := startBerth(t, "--bcs-cluster-id", "BCS-MESOS-10001")
	b.node(t)
	header := http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Content-Type": {"application/json"}}
	const scheduler = "/bcsapi/v4/scheduler/mesos"
	proc := `{"apiVersion":"v4","kind":"process","metadata":{"name":"sh","namespace":"bx"},"spec":{"instance":1,"template":{"spec":{"processes":[` +
		`{"procName":"sh","startCmd":"sleep 100000; true","resources":{"limits":{"cpu":"0.05","memory":"16"}}}]}}}}`
	if status, _, body := b.do(t, http.MethodPost, scheduler+"/namespaces/bx/processes", header, proc); status != http.StatusOK || !strings.Contains(string(body), `"code":0`) {
		t.Fatalf("create the process: %d %s", status, body)
	}
	// bcs-client exec: storage's task group, running, and its first container's ID.
	var container string
	for deadline := time.Now().Add(60 * time.Second); container == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process's task group did not run with a container ID")
		}
		_, _, body := b.do(t, http.MethodPost, "/bcsapi/v4/storage/query/mesos/dynamic/clusters/BCS-MESOS-10001/taskgroup", header, `{"namespace":"bx"}`)
		var env bcswire.Response
		var items []bcswire.StorageItem[bcswire.PodStatus]
		if json.Unmarshal(body, &env) != nil || bcswire.Decode(env.Data, &items) != nil || len(items) != 1 {
			continue
		}
		if p := items[0].Data; p.Status == "Running" && len(p.ContainerStatuses) == 1 {
			container = p.ContainerStatuses[0].ContainerID
		}
	}
	// The command waits for a line of input, so the session is open while it is resized.
	status, _, body := b.do(t, http.MethodPost, scheduler+"/webconsole/create_exec?host_ip=127.0.0.1", header,
		`{"container_id":"`+container+`","cmd":["sh","-c","read who; echo hello from $who"]}`)
	var created struct{ Id string }
	if status != http.StatusOK || bcswire.Decode(body, &created) != nil || created.Id == "" {
		t.Fatalf("create_exec: %d %s", status, body)
	}

	// A token limited to another namespace finds no container of bx, and starts no exec
	// with the exec ID another user was given (or one it made up: it names bx alike).
	tenant := http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Authorization": {"Bearer " + b.namespaceToken(t, "bcs")}}
	if status, _, body := b.do(t, http.MethodPost, scheduler+"/webconsole/create_exec", tenant,
		`{"container_id":"`+container+`","cmd":["sh"]}`); status != http.StatusNotFound || !strings.Contains(string(body), "no running container") {
		t.Errorf("create_exec as the other namespace's token: %d %s", status, body)
	}

	roots, err := client.LoadCAFile(filepath.Join(b.dataDir, "ca.crt"))
	token, err2 := os.ReadFile(filepath.Join(b.dataDir, "admin-token"))
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots}, HandshakeTimeout: 10 * time.Second}
	start := "wss" + strings.TrimPrefix(b.url, "https") + scheduler + "/webconsole/start_exec?host_ip=127.0.0.1&container_id=" + container + "&exec_id=" + created.Id
	if ws, resp, err := dialer.Dial(start, tenant); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		if ws != nil {
			ws.Close()
		}
		t.Fatalf("start_exec as the other namespace's token: %v %v", err, resp)
	}
	admin := http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Authorization": {"Bearer " + strings.TrimSpace(string(token))}}
	ws, resp, err := dialer.Dial(start, admin)
	if err != nil {
		t.Fatalf("start_exec: %v %v", err, resp)
	}
	defer ws.Close()

	// resize_exec, as bcs-client sends it once the WebSocket is open: only the token that
	// started the session finds it.
	resize := `{"exec_id":"` + created.Id + `","height":40,"width":120}`
	if status, _, body := b.do(t, http.MethodPost, scheduler+"/webconsole/resize_exec", tenant, resize); status != http.StatusNotFound {
		t.Errorf("resize_exec as another token: %d %s", status, body)
	}
	if status, _, body := b.do(t, http.MethodPost, scheduler+"/webconsole/resize_exec", admin, resize); status != http.StatusOK || !strings.Contains(string(body), `"code":0`) {
		t.Errorf("resize_exec: %d %s", status, body)
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, []byte("bcs\n")); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	var out strings.Builder
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseNormalClosure {
				t.Fatalf("the stream ended with %v after %q", err, out.String())
			}
			break
		}
		out.Write(msg)
	}
	if !strings.Contains(out.String(), "hello from bcs") {
		t.Errorf("output %q", out.String())
	}
}
