package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// In a cluster of two servers, a step whose agent talks to the second reads what a step
// stored through the first: the second fetches the blob from the first. A node's
// certificate cannot call the servers' blob route.
func TestArtifactFromAnotherServer(t *testing.T) {
	srvA, urlA := newTestServerOf(t, Config{ArtifactDir: t.TempDir()})
	_, urlB := startTestServer(t, Config{ArtifactDir: t.TempDir()}, testStore)
	stepTG(t, "ns", "s1", "n1", nil)
	stepTG(t, "ns", "s2", "n2", func(s *v4.StepIO) { s.Inputs[0].Key = "ns/wf/u1/n-1/out" })
	body := strings.Repeat("model ", 50000)
	r := callAs(t, "n1", http.MethodPut, agentArtifactURL(urlA, "ns", "s1", "artifact", "out"), body, "")
	wantStatus(t, r, http.StatusOK)

	// Before A tells where it is, B can only name the holder.
	wantArtMsg(t, callAs(t, "n2", http.MethodGet, agentArtifactURL(urlB, "ns", "s2", "input", "in"), "", ""),
		http.StatusServiceUnavailable, "kept by another server")

	if err := srvA.AdvertiseArtifacts(context.Background(), strings.TrimPrefix(urlA, "https://")); err != nil {
		t.Fatal(err)
	}
	r = callAs(t, "n2", http.MethodGet, agentArtifactURL(urlB, "ns", "s2", "input", "in"), "", "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != body {
		t.Fatalf("read %d bytes through the other server, want %d", len(r.body), len(body))
	}

	var stored struct{ Digest string }
	stored.Digest = r.header.Get("X-Berth-Digest")
	wantStatus(t, callAs(t, "n1", http.MethodGet, urlA+"/v1/artifacts/blobs/"+stored.Digest, "", ""), http.StatusUnauthorized)
	wantStatus(t, call(t, http.MethodGet, urlA+"/v1/artifacts/blobs/"+stored.Digest, ""), http.StatusUnauthorized)
}
