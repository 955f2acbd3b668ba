package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (s *devServer) do(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// BCS's process example (testdata/seed001_process.json) as written is refused by the API
// with 422 and one detail per problem; the fixed one is created and its definition is kept
// byte for byte.
func TestSeedOverHTTP(t *testing.T) {
	s := startDev(t, t.TempDir(), "--agent=false")
	base := s.url + "/v1/namespaces/ns-a/processes"
	code, body := s.do(t, http.MethodPost, base, mustRead(t, "testdata/seed001_process.json"))
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("want 422, got %d: %s", code, body)
	}
	var e struct {
		Error struct {
			Code    int
			Details []struct{ Field, Message string }
		}
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Code != 422 || len(e.Error.Details) < 9 {
		t.Errorf("want code 422 and every problem, got %d with %d details", e.Error.Code, len(e.Error.Details))
	}

	// The configmap and the secret the example names must exist first, as in BCS.
	fixed := mustRead(t, "testdata/seed001_process_fixed.json")
	if code, body = s.do(t, http.MethodPost, base, fixed); code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "does not exist") {
		t.Fatalf("fixed seed before its configmap and secret: %d %s", code, body)
	}
	s.mustBerth("apply", "-f", "testdata/seed001_refs.json")
	if code, body = s.do(t, http.MethodPost, base, fixed); code != http.StatusCreated {
		t.Fatalf("fixed seed: %d %s", code, body)
	}
	// The definition is the document as written, its package password masked (docs/security.md).
	masked := strings.Replace(fixed, `"pwd": "xxxxxx"`, `"pwd": "******"`, 1)
	if code, body = s.do(t, http.MethodGet, base+"/gamesvc/definition", ""); code != 200 || string(body) != masked {
		t.Errorf("definition: %d, equal=%v: %s", code, string(body) == masked, body)
	}
	if code, _ = s.do(t, http.MethodPost, base, fixed); code != http.StatusConflict {
		t.Errorf("second create: want 409, got %d", code)
	}

	// Update with the current resourceVersion works; the now stale one gets 409. The
	// controller writes the process's status meanwhile, so a read may be outdated by the
	// time it is sent: retry those (each retry is itself a 409 that must not be lost).
	var upd []byte
	for attempt := 0; ; attempt++ {
		_, body = s.do(t, http.MethodGet, base+"/gamesvc", "")
		var obj map[string]any
		json.Unmarshal(body, &obj)
		obj["spec"].(map[string]any)["instance"] = 5
		upd, _ = json.Marshal(obj)
		code, body = s.do(t, http.MethodPut, base+"/gamesvc", string(upd))
		if code == 200 {
			break
		}
		if code != http.StatusConflict || attempt == 20 {
			t.Fatalf("update: %d %s", code, body)
		}
	}
	if code, _ = s.do(t, http.MethodPut, base+"/gamesvc", string(upd)); code != http.StatusConflict {
		t.Errorf("stale update: want 409, got %d", code)
	}
	big := bytes.Repeat([]byte(" "), 3<<20)
	if code, _ = s.do(t, http.MethodPost, s.url+"/v1/apply", string(big)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("3 MiB body: want 413, got %d", code)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, body = s.do(t, http.MethodGet, s.url+path, ""); code != 200 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if !strings.Contains(string(body), "berth_http_requests_total") {
		t.Error("/metrics lacks berth_http_requests_total")
	}
}

// Data written before a clean shutdown is all there after a restart on the same data dir.
func TestDataSurvivesRestart(t *testing.T) {
	data := t.TempDir()
	s := startDev(t, data, "--agent=false")
	s.mustBerth("apply", "-f", writeFiles(t, kindsDir))
	before := withoutStatus(t, s.mustBerth("get", "processes", "-A", "-o", "json"))
	s.stop()

	s2 := startDev(t, data, "--agent=false")
	after := withoutStatus(t, s2.mustBerth("get", "processes", "-A", "-o", "json"))
	if before != after {
		t.Errorf("objects changed across a restart:\nbefore %s\nafter  %s", before, after)
	}
	out := s2.mustBerth("apply", "-f", writeFiles(t, kindsDir))
	if strings.Count(out, "unchanged") != len(kindsObjects) {
		t.Errorf("re-apply after restart must change nothing:\n%s", out)
	}
	events := s2.mustBerth("events", "-A")
	if !strings.Contains(events, "Created") {
		t.Errorf("events from before the restart are kept:\n%s", events)
	}
	s2.stop()
}

// withoutStatus drops the controllers' status from a JSON list: it may change at any
// time, the stored spec may not.
func withoutStatus(t *testing.T, list string) string {
	t.Helper()
	var l struct{ Items []map[string]any }
	if err := json.Unmarshal([]byte(list), &l); err != nil {
		t.Fatal(err)
	}
	for _, it := range l.Items {
		delete(it, "status")
	}
	b, _ := json.Marshal(l.Items)
	return string(b)
}
