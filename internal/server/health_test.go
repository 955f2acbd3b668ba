package server

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/store"
)

func TestHealthAndMetrics(t *testing.T) {
	base := newTestServer(t, Config{ControllerMetrics: controller.NewMetrics()})
	for _, p := range []string{"/healthz", "/readyz"} {
		r := call(t, http.MethodGet, base+p, "")
		if r.code != http.StatusOK || strings.TrimSpace(string(r.body)) != "ok" {
			t.Fatalf("%s: %d %q", p, r.code, r.body)
		}
	}
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/metrics/configmaps", cmJSON("metrics", "cfg", "eA==")), http.StatusCreated)
	r := call(t, http.MethodGet, base+"/metrics", "")
	if r.code != http.StatusOK {
		t.Fatalf("metrics: %d", r.code)
	}
	for _, want := range []string{
		`berth_http_requests_total{code="201",method="POST",route="/v1/namespaces/{ns}/{plural}"} 1`,
		`berth_http_request_duration_seconds_bucket{method="GET",route="/healthz"`,
		`berth_objects{kind="configmap"}`,
		`berth_objects{kind="secret"}`,
		`berth_watch_queued_bytes 0`,
		"go_goroutines",
		"process_cpu_seconds_total",
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// This call's connection is open, and was opened.
	for _, re := range []string{`(?m)^berth_http_connections_opened_total [1-9]`, `(?m)^berth_http_connections_open [1-9]`,
		`(?m)^# TYPE berth_scheduler_placements_total counter`, `(?m)^# TYPE berth_scheduler_place_duration_seconds histogram`} {
		if !regexp.MustCompile(re).Match(r.body) {
			t.Errorf("metrics lack %s", re)
		}
	}
	// The embedded etcd member's metrics, apart.
	etcd := call(t, http.MethodGet, base+"/metrics/etcd", "")
	if etcd.code != http.StatusOK || !strings.Contains(string(etcd.body), "etcd_server_has_leader 1") || strings.Contains(string(etcd.body), "go_goroutines") {
		t.Errorf("etcd metrics: %d\n%.2000s", etcd.code, etcd.body)
	}
	// What a scrape reads passes Prometheus's lint, and promtool itself where it is
	// installed (.ci/run installs it).
	problems, err := promlint.New(bytes.NewReader(r.body)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("BERTH_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool is not installed and BERTH_REQUIRE_PROMTOOL is set")
		}
		t.Log("promtool not installed: its check skipped (promlint ran)")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(r.body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestReadyzUnavailable(t *testing.T) {
	st, err := store.Open(context.Background(), store.Config{Endpoints: testStore.Endpoints(), EtcdTLS: testStore.ClientTLS(), Logger: quietLogger(), Keyring: testStore.Keyring()})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // the etcd client is gone: readiness must fail
	_, url := startTestServer(t, Config{}, st)
	r := call(t, http.MethodGet, url+"/readyz", "")
	wantStatus(t, r, http.StatusServiceUnavailable)
	if r := call(t, http.MethodGet, url+"/healthz", ""); r.code != http.StatusOK {
		t.Fatalf("healthz %d while etcd is gone", r.code)
	}
}

func TestPackagesServed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.tgz"), []byte("package bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := newTestServer(t, Config{PackagesDir: dir})
	r := call(t, http.MethodGet, url+"/packages/app.tgz", "")
	if r.code != http.StatusOK || string(r.body) != "package bytes" {
		t.Errorf("package: %d %q", r.code, r.body)
	}
	for _, path := range []string{"/packages/", "/packages/missing.tgz", "/packages/../health_test.go"} {
		if r := call(t, http.MethodGet, url+path, ""); r.code != http.StatusNotFound {
			t.Errorf("%s: want 404, got %d", path, r.code)
		}
	}
	if r := call(t, http.MethodGet, newTestServer(t, Config{})+"/packages/app.tgz", ""); r.code != http.StatusNotFound {
		t.Errorf("without a packages dir: want 404, got %d", r.code)
	}
}
