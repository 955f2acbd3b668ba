package server

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berthhq/berth/internal/controller"
)

// dashboardMetrics returns the berth_ metric names docs/grafana/berth.json queries, with
// prefix, without the _bucket/_sum/_count of histograms.
func dashboardMetrics(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/grafana/berth.json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range regexp.MustCompile(prefix+`[a-z_]+`).FindAllString(string(b), -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			m = strings.TrimSuffix(m, suffix)
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// TestDashboardQueriesServedMetrics: every server, controller and scheduler metric the
// Grafana dashboard queries is one the server serves (the agents' are checked by the
// agent's tests).
func TestDashboardQueriesServedMetrics(t *testing.T) {
	m := newMetrics(nil, nil)
	m.registry.MustRegister(controller.NewMetrics().Collectors()...)
	served := map[string]bool{}
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		m.registry.Describe(ch)
		close(ch)
	}()
	re := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		if s := re.FindStringSubmatch(d.String()); s != nil {
			served[s[1]] = true
		}
	}
	names := dashboardMetrics(t, "berth_")
	if len(names) < 10 {
		t.Fatalf("the dashboard queries only %v", names)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "berth_agent_") && !served[name] {
			t.Errorf("the dashboard queries %s, which the server does not serve", name)
		}
	}
}
