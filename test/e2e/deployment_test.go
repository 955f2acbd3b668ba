package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// deploymentSpec turns a webSpec into a deployment of it with a VERSION env var and the
// rolling update strategy.
func deploymentSpec(t *testing.T, w webSpec, version, strategy string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(w.json()), &m); err != nil {
		t.Fatal(err)
	}
	m["kind"] = "deployment"
	spec := m["spec"].(map[string]any)
	spec["strategy"] = json.RawMessage(strategy)
	proc := spec["template"].(map[string]any)["spec"].(map[string]any)["processes"].([]any)[0].(map[string]any)
	proc["env"] = append(proc["env"].([]any), map[string]any{"name": "VERSION", "value": version})
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apiGet decodes a GET of the server's API (faster than the CLI for sampling).
func (s *devServer) apiGet(path string, out any) error {
	resp, err := s.http.Get(s.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// healthySample counts the deployment's instances two ways: task groups berth reports
// Running and healthy (and not being stopped), and instances whose /healthz answers 200.
func (s *devServer) healthySample(ns, deployment string) (api, probed int, err error) {
	var list struct{ Items []*v4.TaskGroup }
	if err := s.apiGet("/v1/namespaces/"+ns+"/taskgroups", &list); err != nil {
		return 0, 0, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, tg := range list.Items {
		if !strings.HasPrefix(tg.Spec.Owner.Name, deployment+"-v") || tg.Status.Phase != v4.StatusRunning {
			continue
		}
		if tg.Spec.Desired != v4.DesiredStopped && tg.Status.Healthy != nil && *tg.Status.Healthy {
			api++
		}
		wg.Go(func() {
			if code, _, err := httpGet("http://127.0.0.1:" + strconv.Itoa(port(tg, "http")) + "/healthz"); err == nil && code == 200 {
				mu.Lock()
				probed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return api, probed, nil
}

func (s *devServer) deployment(ns, name string) *v4.Deployment {
	s.t.Helper()
	var d v4.Deployment
	if err := s.apiGet("/v1/namespaces/"+ns+"/deployments/"+name, &d); err != nil {
		s.t.Fatal(err)
	}
	return &d
}

// cleanupDeployments deletes every deployment of ns at the end of the test and waits for
// their task groups to go (registered after the agents, so it runs while they still do).
func (s *devServer) cleanupDeployments(ns string) {
	s.t.Cleanup(func() {
		out := s.berth("", "get", "deployments", "-n", ns, "-o", "name")
		for _, line := range strings.Fields(out.stdout) {
			if _, name, ok := strings.Cut(line, "/"); ok {
				s.berth("", "delete", "deployment", name, "-n", ns, "--ignore-not-found")
			}
		}
		deadline := time.Now().Add(40 * time.Second)
		for time.Now().Before(deadline) {
			if r := s.berth("", "get", "taskgroups", "-n", ns, "-o", "name"); strings.TrimSpace(r.stdout) == "" {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
		s.t.Errorf("task groups of %s still there 40 s after deleting their deployments", ns)
	})
}

// Issue 6 acceptance: a rolling update of 6 instances with maxUnavailable 1 and maxSurge
// 1 never has fewer than 5 healthy instances (sampled all along, from berth's view and by
// probing the instances); a version whose health check fails suspends the rollout, and
// undo brings every instance back on the old version.
func TestDeploymentRollingUpdateAndUndo(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "24100-24199", "24200-24299", "24300-24399")
	const ns = "e2e-deploy"
	s.cleanupDeployments(ns)
	check := func(path string) string {
		return `[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"gracePeriodSeconds":1,"consecutiveFailures":2,"http":{"portName":"http","path":"` + path + `"}}]`
	}
	web := webDemo(pkgs, ns, "web", 6)
	web.health = check("/healthz")
	const strategy = `{"type":"RollingUpdate","rollingupdate":{"maxUnavailable":1,"maxSurge":1,"stepDeadline":120}}`

	s.applySpec(t, deploymentSpec(t, web, "one", strategy))
	waitUntil(t, 90*time.Second, "revision 1 with 6 healthy instances", func() bool {
		d := s.deployment(ns, "web")
		api, probed, err := s.healthySample(ns, "web")
		return err == nil && d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 1 && api == 6 && probed == 6
	})

	// Roll to version two, sampling every 200 ms until the rollout is done.
	s.applySpec(t, deploymentSpec(t, web, "two", strategy))
	start, samples, minAPI, minProbed := time.Now(), 0, 6, 6
	for {
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("rollout not done after 3 minutes: %+v", s.deployment(ns, "web").Status)
		}
		api, probed, err := s.healthySample(ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		samples++
		minAPI, minProbed = min(minAPI, api), min(minProbed, probed)
		if api < 5 || probed < 5 {
			t.Errorf("sample %d after %s: %d healthy task groups, %d answering /healthz; want at least 5", samples, time.Since(start).Round(time.Millisecond), api, probed)
		}
		d := s.deployment(ns, "web")
		if d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && d.Status.Old == 0 && d.Status.CurrentAvailable == 6 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("rollout to revision 2 took %s: %d samples, fewest healthy %d (berth) and %d (probed)", time.Since(start).Round(time.Second), samples, minAPI, minProbed)
	if out := s.mustBerth("rollout", "status", "web", "-w", "-n", ns); !strings.Contains(out, "successfully rolled out (revision 2)") {
		t.Errorf("rollout status -w:\n%s", out)
	}

	// Version three fails its health check: the rollout suspends, a scale waits, undo goes back.
	web.health = check("/no-such-path")
	s.applySpec(t, deploymentSpec(t, web, "three", strategy))
	waitUntil(t, 90*time.Second, "the rollout suspended", func() bool {
		return s.deployment(ns, "web").Status.Phase == v4.DeploymentUpdateSuspend
	})
	status := s.berth("", "rollout", "status", "web", "-n", ns)
	if !strings.Contains(status.stdout, "revision 3, UpdateSuspend") {
		t.Errorf("rollout status:\n%s%s", status.stdout, status.stderr)
	}
	s.eventsSay("RolloutSuspended", "-n", ns)
	if r := s.berth("", "scale", "deployment", "web", "7", "-n", ns); r.code == 0 || !strings.Contains(r.stderr, "rollout operation") {
		t.Errorf("scale during the rollout: exit %d, %s", r.code, r.stderr)
	}
	if api, _, _ := s.healthySample(ns, "web"); api < 5 {
		t.Errorf("only %d healthy instances while suspended", api)
	}
	s.mustBerth("rollout", "undo", "web", "-n", ns)
	if r := s.berth("", "rollout", "status", "web", "-w", "-n", ns); r.code != 0 || !strings.Contains(r.stdout, "successfully rolled out (revision 2)") {
		t.Errorf("rollout status -w after undo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitUntil(t, 60*time.Second, "6 healthy instances of revision 2 only", func() bool {
		var list struct{ Items []*v4.TaskGroup }
		if err := s.apiGet("/v1/namespaces/"+ns+"/taskgroups", &list); err != nil {
			return false
		}
		api, probed, err := s.healthySample(ns, "web")
		return err == nil && len(list.Items) == 6 && api == 6 && probed == 6
	})
	for _, tg := range s.taskGroups(ns, "web-v2") {
		if _, env, err := httpGet("http://127.0.0.1:" + strconv.Itoa(port(tg, "http")) + "/env"); err != nil || !strings.Contains(env, "VERSION=two") {
			t.Errorf("%s does not run version two: %v", tg.Metadata.Name, err)
		}
	}
	hist := s.mustBerth("rollout", "history", "web", "-n", ns)
	for _, want := range []string{"1 ", "2* ", "3 ", "created", "template changed"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}
}
