package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// REMOTE_HTTP checks run from the leader and decide readiness: an instance whose check
// fails leaves its service's endpoints (and so DNS, VIPs and load-balancer groups), keeps
// running, and comes back once the check passes again.
func TestRemoteHealthChecksDecideReadiness(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	startAgent(t, s, "rc", "29600-29699")
	const ns = "rce2e"
	s.cleanupProcesses(ns)
	s.applySpec(t, httpdProcess{name: "rweb", ns: ns, instances: 2, prepare: "touch www/healthz", cpu: "0.1",
		healthChecks: `[{"type":"REMOTE_HTTP","intervalSeconds":2,"timeoutSeconds":1,"http":{"portName":"http","path":"/healthz"}}]`}.json())
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"rweb","namespace":%q},
		"spec":{"selector":{"app":"rweb"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, ns))
	tgs := s.running(t, ns, "rweb", 2)
	endpoints := func() (ready, notReady []string) {
		r := s.berth("", "get", "endpoints", "rweb", "-n", ns, "-o", "json")
		var ep v4.Endpoints
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ep) != nil {
			return nil, nil
		}
		for _, e := range ep.Endpoints {
			ready = append(ready, e.Target.ID)
		}
		for _, e := range ep.NotReady {
			notReady = append(notReady, e.Target.ID+": "+e.Reason)
		}
		return ready, notReady
	}
	waitUntil(t, 30*time.Second, "both instances ready once the leader's checks pass", func() bool {
		ready, _ := endpoints()
		return len(ready) == 2
	})
	sick := tgs[0]
	healthz := filepath.Join("/proc", strconv.Itoa(pidOf(sick)), "cwd", "healthz") // httpd works in its -h directory
	if err := os.Remove(healthz); err != nil {
		t.Fatal(err)
	}
	var notReady []string
	waitUntil(t, 30*time.Second, sick.Metadata.Name+" to leave the endpoints", func() bool {
		var ready []string
		ready, notReady = endpoints()
		return len(ready) == 1 && ready[0] != sick.Metadata.Name && len(notReady) == 1
	})
	if !strings.HasPrefix(notReady[0], sick.Metadata.Name) || !strings.Contains(strings.ToLower(notReady[0]), "remote") {
		t.Errorf("not ready: %q, want %s with a reason naming the remote check", notReady, sick.Metadata.Name)
	}
	for _, tg := range s.taskGroups(ns, "rweb") {
		if tg.Metadata.Name != sick.Metadata.Name {
			continue
		}
		if tg.Status.Phase != v4.StatusRunning || tg.Status.Remote == nil || tg.Status.Remote.Healthy || !alive(pidOf(sick)) {
			t.Errorf("the instance with a failing remote check: phase %s, remote %+v, alive %v (it must keep running)",
				tg.Status.Phase, tg.Status.Remote, alive(pidOf(sick)))
		}
	}
	if err := os.WriteFile(healthz, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, sick.Metadata.Name+" to come back", func() bool {
		ready, _ := endpoints()
		return len(ready) == 2
	})
}
