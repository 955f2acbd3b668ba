package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csivolume"
)

// The agent's csi volumes go to the server's claim routes through its servers: a refused
// claim fails the publication with the server's reason and the volume named, a release
// the server no longer knows (404) counts as done, and the executor gets the manager.
// A plugin the node lacks is reported as a node event, from the second attempt.
func TestCSIVolumeWiring(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req v4.CSIClaimRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		calls = append(calls, r.URL.Path+" "+req.Namespace+"/"+req.Volume+" "+req.TaskGroup)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/release") {
			http.Error(w, "no such claim", http.StatusNotFound)
			return
		}
		http.Error(w, "volume db is claimed for writing on node n2", http.StatusConflict)
	}))
	defer srv.Close()
	data := t.TempDir()
	a, err := New(Config{ServerURLs: []string{"https://127.0.0.1:1"}, DataDir: data, NodeName: "n1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if a.servers, err = newServers([]string{srv.URL}, srv.Client(), "", 2, a.log); err != nil {
		t.Fatal(err)
	}
	a.nodeEvents = make(chan v4.AgentEvent, 4)
	if a.executorConfig(nil).CSIVolumes == nil {
		t.Fatal("the executor has no CSI volumes")
	}
	dir := filepath.Join(data, "pods", "ns.tg", "volumes", "data")
	err = a.csiVols.Publish(context.Background(), "ns/tg", dir, "ns", "tg", &v4.CSIVolumeSource{Volume: "db"})
	if err == nil || !strings.Contains(err.Error(), "claim volume db: server answered 409 Conflict: volume db is claimed for writing on node n2") {
		t.Fatalf("Publish: %v", err)
	}
	mu.Lock()
	got := strings.Join(calls, "; ")
	mu.Unlock()
	if want := "/v1/agent/volumes/claim ns/db tg; /v1/agent/volumes/release ns/db tg"; got != want {
		t.Errorf("server calls %q, want %q", got, want)
	}
	if recs, err := a.csiVols.Records(); err != nil || len(recs) != 0 {
		t.Errorf("records %+v, %v: the 404 of the release counts as released", recs, err)
	}

	rec := csivolume.Record{Pod: "ns/gone", Dir: dir, Volume: "db", Namespace: "ns", Plugin: "absent.example"}
	missing := csivolume.ErrPluginMissing
	a.csiTeardownFailed(rec, 1, missing)
	a.csiTeardownFailed(rec, 2, missing)
	select {
	case ev := <-a.nodeEvents:
		if ev.Reason != "CSIVolumeUnpublishFailed" || !strings.Contains(ev.Message, "ns/db of pod ns/gone") || !strings.Contains(ev.Message, "attempt 2") {
			t.Errorf("event %+v", ev)
		}
	default:
		t.Fatal("no event")
	}
	if len(a.nodeEvents) != 0 {
		t.Error("the first attempt without the plugin was reported")
	}
}
