package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A process whose constraint names no node: hostname CLUSTER over a set of other hosts.
const unplaceableProcess = `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"e2e"},
	"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"CLUSTER","type":4,"set":{"item":["elsewhere-1","elsewhere-2"]}}]}]},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web",
		"resources":{"requests":{"cpu":"0.1","memory":"64"}}}]}}}}`

// registerNode posts a node as its agent would.
func registerNode(t *testing.T, s *devServer, name, ip string) {
	t.Helper()
	body := `{"apiVersion":"v4","kind":"node","metadata":{"name":"` + name + `"},
		"spec":{"ip":"` + ip + `","capacity":{"cpu":4,"memoryMB":8192,"diskMB":50000}},
		"status":{"phase":"Ready"}}`
	resp, err := s.http.Post(s.url+"/v1/nodes", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("register %s: %d %s", name, resp.StatusCode, b)
	}
}

func TestNodesAndPlan(t *testing.T) {
	// Without the dev agent, so the cluster has exactly the two nodes registered here.
	s := startDev(t, t.TempDir(), "--agent=false")
	registerNode(t, s, "node-1", "10.0.0.1")
	registerNode(t, s, "node-2", "10.0.0.2")

	if out := s.mustBerth("node", "taint", "node-2", "dedicated=db:NoSchedule"); out != "node/node-2 tainted\n" {
		t.Fatalf("taint: %q", out)
	}
	out := s.mustBerth("nodes")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "node-1") || !strings.Contains(lines[1], "10.0.0.1") ||
		!strings.Contains(lines[2], "node-2") || !strings.Contains(lines[2], " 1 ") {
		t.Fatalf("berth nodes:\n%s", out)
	}
	if out := s.mustBerth("describe", "node", "node-2"); !strings.Contains(out, "dedicated=db:NoSchedule") ||
		!strings.Contains(out, "node node-2 patched") {
		t.Fatalf("describe node:\n%s", out)
	}

	spec := writeFiles(t, map[string]string{"web.json": unplaceableProcess})
	r := s.berth("", "plan", "-f", spec)
	t.Logf("berth plan:\n%s", r.stdout)
	if r.code != 2 {
		t.Fatalf("berth plan: exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "1 instance of process e2e/web cannot be placed") {
		t.Fatalf("berth plan output:\n%s", r.stdout)
	}
	// The reason counts both nodes (one fails the constraint, the other its taint first
	// or the constraint, whichever check runs first) and names the constraint.
	if !strings.Contains(r.stdout, "2 nodes") || !strings.Contains(r.stdout, "hostname CLUSTER") {
		t.Fatalf("berth plan does not explain the constraint over 2 nodes:\n%s", r.stdout)
	}
	// Nothing was written by the plan.
	if out := s.mustBerth("get", "procs", "-n", "e2e"); out != "" {
		t.Fatalf("plan created objects:\n%s", out)
	}

	// A spec that fits: two instances, one per host; the tainted node only with its toleration.
	fits := strings.Replace(unplaceableProcess, `"operate":"CLUSTER","type":4,"set":{"item":["elsewhere-1","elsewhere-2"]}}]}`,
		`"operate":"UNIQUE"}]},{"unionData":[{"name":"dedicated","operate":"TOLERATION","type":3,"text":{"value":"db"}}]}`, 1)
	fits = strings.Replace(fits, `"instance":1`, `"instance":2`, 1)
	r = s.berth("", "plan", "-f", writeFiles(t, map[string]string{"web.json": fits}))
	if r.code != 0 || !strings.Contains(r.stdout, "node-1") || !strings.Contains(r.stdout, "node-2") {
		t.Fatalf("berth plan of a spec that fits: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
