package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
)

// csiAgent answers POST /v1/csi/controller as an agent does: a create gets a volume, a
// delete of "missing" the plugin's NotFound as a 404.
type csiAgent struct {
	mu   sync.Mutex
	got  []v4.CSIControllerRequest
	from []string
}

func (f *csiAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who := "anonymous"
	if c := httpapi.PeerCert(r.TLS); c != nil && pki.IsServer(c) {
		who = "server"
	}
	var req v4.CSIControllerRequest
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	f.mu.Lock()
	f.got, f.from = append(f.got, req), append(f.from, r.Method+" "+r.URL.Path+" "+who)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case req.VolumeID == "missing":
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":404,"reason":"NotFound","message":"csi plugin p.csi: DeleteVolume: rpc error: code = NotFound desc = no such volume"}}`)
	default:
		io.WriteString(w, `{"volumeID":"vol-`+req.Name+`","capacity":1000,"topology":[{"segments":{"zone":"a"}}]}`)
	}
}

// The server makes a controller call through the node's agent over the verified
// connection, and keeps the agent's status and message on failure.
func TestCSIControllerCall(t *testing.T) {
	fa := &csiAgent{}
	addr := serveFakeAgent(t, fa, testCA(t), "n1")
	s, url := newTestServerOf(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	heartbeatAt(t, url, "n1", addr)
	ctx := context.Background()
	reply, err := s.csiController(ctx, "n1", v4.CSIControllerRequest{Plugin: "p.csi", Op: v4.CSIOpCreate, Name: "uid1", MinBytes: 1000})
	if err != nil || reply.VolumeID != "vol-uid1" || reply.Capacity != 1000 || len(reply.Topology) != 1 {
		t.Fatalf("create: %+v, %v", reply, err)
	}
	fa.mu.Lock()
	if fa.from[0] != "POST /v1/csi/controller server" || fa.got[0].Name != "uid1" || fa.got[0].Op != v4.CSIOpCreate {
		t.Errorf("the agent got %v %+v", fa.from, fa.got)
	}
	fa.mu.Unlock()
	_, err = s.csiController(ctx, "n1", v4.CSIControllerRequest{Plugin: "p.csi", Op: v4.CSIOpDelete, VolumeID: "missing"})
	if csiStatus(err) != http.StatusNotFound || !strings.Contains(err.Error(), "no such volume") {
		t.Errorf("delete of a missing volume: %v (status %d), want the plugin's 404", err, csiStatus(err))
	}
	if _, err := s.csiController(ctx, "nope", v4.CSIControllerRequest{Plugin: "p.csi", Op: v4.CSIOpDelete, VolumeID: "v"}); csiStatus(err) != http.StatusNotFound {
		t.Errorf("an unknown node: %v", err)
	}
}
