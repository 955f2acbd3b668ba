package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/volumes"
)

// fakeCSIAgent serves POST /v1/csi/controller as an agent would: create answers an ID,
// "refuse" a 422, "fail" a 503.
type fakeCSIAgent struct{ got chan v4.CSIControllerRequest }

func (f *fakeCSIAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req v4.CSIControllerRequest
	if r.Method != http.MethodPost || r.URL.Path != "/v1/csi/controller" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.got <- req
	switch req.Name {
	case "refuse":
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(`{"error":{"code":422,"reason":"Invalid","message":"capacity out of range"}}`))
	case "fail":
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":503,"reason":"Unavailable","message":"plugin restarting"}}`))
	default:
		json.NewEncoder(w).Encode(v4.CSIControllerReply{VolumeID: "vol-" + req.Name, Capacity: req.MinBytes})
	}
}

// The server's controller calls reach the agent of the node named, with the request as
// it is; a 4xx is the plugin's refusal (volumes.ErrRefused), a 5xx a passing failure, and
// the agent of another node (its certificate) is not called at all.
func TestCSIControllerCalls(t *testing.T) {
	fa := &fakeCSIAgent{got: make(chan v4.CSIControllerRequest, 4)}
	srv, url := newTestServerOf(t, Config{})
	for _, n := range []string{"n1", "n2"} {
		wantStatus(t, callAs(t, n, http.MethodPost, url+"/v1/agent/register", nodeJSON(n, ""), ""), http.StatusCreated)
	}
	heartbeatAt(t, url, "n1", serveFakeAgent(t, fa, testCA(t), "n1"))
	heartbeatAt(t, url, "n2", serveFakeAgent(t, fa, testCA(t), "n1")) // n1's agent where n2's should be
	calls, ctx := srv.VolumeController(), context.Background()

	req := v4.CSIControllerRequest{Plugin: "p.csi", Op: v4.CSIOpCreate, Name: "berth-x", MinBytes: 1e9, Secrets: map[string]string{"k": "v"}}
	reply, err := calls.Call(ctx, "n1", req)
	if err != nil || reply.VolumeID != "vol-berth-x" || reply.Capacity != 1e9 {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	if got := <-fa.got; got.Name != "berth-x" || got.Secrets["k"] != "v" || got.Op != v4.CSIOpCreate {
		t.Fatalf("the agent got %+v", got)
	}

	req.Name = "refuse"
	if _, err := calls.Call(ctx, "n1", req); !errors.Is(err, volumes.ErrRefused) || !strings.Contains(err.Error(), "capacity out of range") {
		t.Fatalf("refusal: %v", err)
	}
	<-fa.got
	req.Name = "fail"
	if _, err := calls.Call(ctx, "n1", req); err == nil || errors.Is(err, volumes.ErrRefused) || !strings.Contains(err.Error(), "plugin restarting") {
		t.Fatalf("failure: %v", err)
	}
	<-fa.got

	req.Name = "berth-y"
	if _, err := calls.Call(ctx, "n2", req); err == nil || !strings.Contains(err.Error(), `not node n2's agent`) || errors.Is(err, volumes.ErrRefused) {
		t.Fatalf("another node's agent: %v", err)
	}
	select {
	case got := <-fa.got:
		t.Fatalf("the impostor was sent %+v", got)
	default:
	}
}
