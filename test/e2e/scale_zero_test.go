package e2e

import (
	"encoding/json"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Scale to zero through the CLI: the processes stop and their task groups go, the
// process stays (Stopped) with its service, whose endpoints become empty; scaling up
// starts 2 again behind the same service. The events say so.
func TestScaleToZeroAndBack(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	startAgent(t, s, "zero", "31650-31699")
	const ns = "zeroe2e"
	s.cleanupProcesses(ns)
	s.applySpec(t, httpdProcess{name: "zweb", ns: ns, instances: 2, prepare: "echo hi > www/index.html", cpu: "0.1"}.json())
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"zweb","namespace":%q},
		"spec":{"selector":{"app":"zweb"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, ns))
	tgs := s.running(t, ns, "zweb", 2)
	ready := func() int {
		r := s.berth("", "get", "endpoints", "zweb", "-n", ns, "-o", "json")
		var ep v4.Endpoints
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ep) != nil {
			return -1
		}
		return len(ep.Endpoints)
	}
	process := func() *v4.Process {
		var p v4.Process
		if err := json.Unmarshal([]byte(s.mustBerth("get", "process", "zweb", "-n", ns, "-o", "json")), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	waitUntil(t, 30*time.Second, "2 ready endpoints", func() bool { return ready() == 2 })
	created := process().Metadata.CreationTimestamp

	start := time.Now()
	s.mustBerth("scale", "process", "zweb", "0", "-n", ns)
	waitUntil(t, 30*time.Second, "no task group left", func() bool { return len(s.taskGroups(ns, "zweb")) == 0 })
	waitUntil(t, 10*time.Second, "the processes gone", func() bool { return !alive(pidOf(tgs[0])) && !alive(pidOf(tgs[1])) })
	waitUntil(t, 30*time.Second, "Stopped", func() bool { return process().Status.Phase == v4.AppStopped })
	t.Logf("scale to 0: Stopped %v after the command", time.Since(start).Round(time.Millisecond))
	if p := process(); p.Spec.Instance != 0 || !p.Metadata.CreationTimestamp.Equal(created) {
		t.Fatalf("the process at 0: instance %d, created %v (was %v)", p.Spec.Instance, p.Metadata.CreationTimestamp, created)
	}
	waitUntil(t, 30*time.Second, "empty endpoints", func() bool { return ready() == 0 })
	s.mustBerth("get", "service", "zweb", "-n", ns)
	s.eventsSay("scaled from 2 to 0", "-n", ns)

	start = time.Now()
	s.mustBerth("scale", "process", "zweb", "2", "-n", ns)
	s.running(t, ns, "zweb", 2)
	t.Logf("scale to 2: both Running %v after the command", time.Since(start).Round(time.Millisecond))
	waitUntil(t, 30*time.Second, "2 ready endpoints again", func() bool { return ready() == 2 })
	s.eventsSay("placed instances 0 and 1 on zero", "-n", ns)
}
