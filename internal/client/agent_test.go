package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestAgentCallsSendTheToken(t *testing.T) {
	var auth, path, query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path, query = r.Header.Get("Authorization"), r.URL.Path, r.URL.RawQuery
		switch r.URL.Path {
		case "/v1/agent/nodes/n1/report":
			io.WriteString(w, `{"unknown":[{"namespace":"ns","name":"tg"}]}`)
		case "/v1/agent/secrets/ns/pw":
			io.WriteString(w, `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"ns"},"datas":{}}`)
		case "/v1/agent/nodes/n1/taskgroups":
			io.WriteString(w, `{"kind":"List","resourceVersion":"7","items":[{"metadata":{"name":"0.a","namespace":"ns"},"spec":{"node":"n1"}}]}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithBearerToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.AgentHeartbeat(ctx, "n1", v4.AgentHeartbeat{AgentVersion: "v1"}); err != nil || auth != "Bearer tok" || path != "/v1/agent/nodes/n1/heartbeat" {
		t.Fatalf("heartbeat: %v %q %q", err, auth, path)
	}
	res, err := c.AgentReport(ctx, "n1", v4.AgentReport{})
	if err != nil || len(res.Unknown) != 1 || res.Unknown[0].Name != "tg" {
		t.Fatalf("report: %v %+v", err, res)
	}
	if _, err := c.AgentSecret(ctx, "ns", "pw", "n1", "0.a"); err != nil || query != "node=n1&taskgroup=0.a" {
		t.Fatalf("secret: %v %q", err, query)
	}
	tgs, rv, err := c.AgentTaskGroups(ctx, "n1")
	if err != nil || rv != "7" || len(tgs) != 1 || tgs[0].Spec.Node != "n1" {
		t.Fatalf("task groups: %v %q %+v", err, rv, tgs)
	}
	if err := c.AgentPutStatus(ctx, "ns", "0.a", v4.TaskGroupStatus{Phase: v4.StatusRunning}); err != nil || path != "/v1/agent/taskgroups/ns/0.a/status" {
		t.Fatalf("status: %v %q", err, path)
	}
}

func TestLogsAndAction(t *testing.T) {
	f, c := newFake(t, http.StatusOK, "hello\n")
	f.contentType = "text/plain"
	rc, err := c.Logs(context.Background(), "ns", "0.web", LogOptions{Task: "web", Follow: true, Tail: 10, Stream: v4.LogStreamStderr, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello\n" || f.path != "/v1/namespaces/ns/taskgroups/0.web/logs" || f.query != "follow=true&stream=stderr&tail=10&task=web&timestamps=true" {
		t.Fatalf("logs: %q %s?%s", b, f.path, f.query)
	}
	f.status, f.body = http.StatusNoContent, ""
	if err := c.Action(context.Background(), "ns", "0.web", "", v4.ActionReload); err != nil ||
		f.method != http.MethodPost || f.path != "/v1/namespaces/ns/taskgroups/0.web/actions/reload" || f.query != "" {
		t.Fatalf("action: %v %s %s?%s", err, f.method, f.path, f.query)
	}
	f.status, f.body = http.StatusBadGateway, `{"error":{"code":502,"message":"cannot reach the agent"}}`
	if err := c.Action(context.Background(), "ns", "0.web", "", v4.ActionRestart); StatusOf(err) != http.StatusBadGateway {
		t.Fatalf("502: %v", err)
	}
}
