package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// drainHealth is a fast HTTP check, so moves wait for real health without slowing the test.
const drainHealth = `[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"gracePeriodSeconds":1,"consecutiveFailures":3,"http":{"portName":"http","path":"/healthz"}}]`

// Drain node-a while a 4-instance service runs on both nodes: every sample taken during
// the drain sees at least 3 instances Running and Healthy in the API and answering
// /healthz; afterwards all 4 run on node-b and node-a stays disabled. A stateful
// instance stays unless the drain is forced; `berth move` moves one instance to a named
// node. Then engine maintenance refuses writes and holds restarts until it is off.
func TestDrainKeepsTheServiceUp(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "25100-25199", "25200-25299")
	s.cleanupProcesses("drain")
	t.Cleanup(func() { s.berth("", "maintenance", "off") }) // or the cleanup's deletes are refused
	web, db := webDemo(pkgs, "drain", "web", 4), webDemo(pkgs, "drain", "db", 1)
	web.health, db.health = drainHealth, drainHealth
	s.applySpec(t, web.json())
	s.applySpec(t, strings.Replace(db.json(), `"labels":{"app":"db"}`, `"labels":{"app":"db"},"annotations":{"berth.io/stateful":"true"}`, 1))
	s.healthy(t, "drain", "web", 4)
	s.healthy(t, "drain", "db", 1)

	// berth move: a web instance from node-b to node-a, by name.
	var fromB *v4.TaskGroup
	for _, tg := range s.taskGroups("drain", "web") {
		if tg.Spec.Node == "node-b" {
			fromB = tg
		}
	}
	if fromB == nil {
		t.Fatal("spread put no web instance on node-b")
	}
	out := s.mustBerth("move", fromB.Metadata.Name, "--to", "node-a", "-n", "drain")
	if !strings.Contains(out, "to node node-a") {
		t.Errorf("berth move printed %q", out)
	}
	waitUntil(t, 60*time.Second, "the moved instance healthy on node-a and the old one gone", func() bool {
		moved := false
		for _, tg := range s.taskGroups("drain", "web") {
			if tg.Metadata.Name == fromB.Metadata.Name {
				return false
			}
			moved = moved || tg.Spec.Index == fromB.Spec.Index && tg.Spec.Node == "node-a" && healthy(tg)
		}
		return moved
	})
	// The stateful db moves only when forced; put it on node-a for the drain.
	dbTG := s.taskGroups("drain", "db")[0]
	other := map[string]string{"node-a": "node-b", "node-b": "node-a"}[dbTG.Spec.Node]
	r := s.berth("", "move", dbTG.Metadata.Name, "--to", other, "-n", "drain")
	if r.code == 0 || !strings.Contains(r.stderr, "stateful") {
		t.Fatalf("moving a stateful instance without --force: exit %d, %s", r.code, r.stderr)
	}
	if dbTG.Spec.Node != "node-a" {
		s.mustBerth("move", dbTG.Metadata.Name, "--to", "node-a", "--force", "-n", "drain")
		waitUntil(t, 60*time.Second, "db healthy on node-a", func() bool {
			tgs := s.taskGroups("drain", "db")
			return len(tgs) == 1 && tgs[0].Spec.Node == "node-a" && healthy(tgs[0])
		})
	}

	samples, worst := s.sampleService(t, "drain", "web", func() {
		out := s.longBerth(t, "drain", "node-a", "--wait")
		if !strings.Contains(out, "node node-a drained") || !strings.Contains(out, "DrainMoving") || !strings.Contains(out, "is stateful") {
			t.Errorf("berth drain --wait printed:\n%s", out)
		}
	})
	t.Logf("%d samples during the drain, at worst %d healthy instances", samples, worst)
	if samples < 10 || worst < 3 {
		t.Errorf("%d samples, at worst %d instances healthy and answering: want at least 3 throughout", samples, worst)
	}
	waitUntil(t, 30*time.Second, "web only on node-b, all healthy", func() bool {
		tgs := s.taskGroups("drain", "web")
		for _, tg := range tgs {
			if tg.Spec.Node != "node-b" || !healthy(tg) {
				return false
			}
		}
		return len(tgs) == 4
	})
	if tgs := s.taskGroups("drain", "db"); len(tgs) != 1 || tgs[0].Spec.Node != "node-a" {
		t.Errorf("the stateful db must stay on node-a: %d task groups", len(tgs))
	}
	if node := s.mustBerth("get", "node", "node-a", "-o", "json"); !strings.Contains(node, `"disabled": true`) {
		t.Errorf("node-a must stay disabled:\n%s", node)
	}
	// Forced, the db goes too.
	if out := s.longBerth(t, "drain", "node-a", "--force", "--wait"); !strings.Contains(out, "drained") {
		t.Errorf("forced drain printed:\n%s", out)
	}
	waitUntil(t, 30*time.Second, "db on node-b and nothing left on node-a", func() bool {
		tgs := s.taskGroups("drain", "db")
		return len(tgs) == 1 && tgs[0].Spec.Node == "node-b" && healthy(tgs[0])
	})

	s.maintenanceHoldsRestarts(t, web)
}

// maintenanceHoldsRestarts: writes get 423 with the reason, a killed process stays dead,
// and off resumes restarts.
func (s *devServer) maintenanceHoldsRestarts(t *testing.T, web webSpec) {
	t.Helper()
	s.mustBerth("maintenance", "on", "--reason", "e2e upgrade")
	web.instances = 5
	for _, args := range [][]string{{"apply", "-f", "-"}, {"scale", "process", "web", "3", "-n", "drain"}} {
		r := s.berth(web.json(), args...)
		if r.code == 0 || !strings.Contains(r.stderr, "maintenance mode") || !strings.Contains(r.stderr, "e2e upgrade") {
			t.Errorf("berth %v in maintenance: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	victim := s.taskGroups("drain", "web")[0]
	if err := syscall.Kill(pidOf(victim), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the killed instance Failed", func() bool {
		for _, tg := range s.taskGroups("drain", "web") {
			if tg.Metadata.Name == victim.Metadata.Name {
				return tg.Status.Phase == v4.StatusFailed
			}
		}
		return false
	})
	time.Sleep(4 * time.Second) // interval 1 s: a restart would have come
	for _, tg := range s.taskGroups("drain", "web") {
		if tg.Spec.Index == victim.Spec.Index && tg.Metadata.Name != victim.Metadata.Name {
			t.Fatalf("restarted during maintenance as %s", tg.Metadata.Name)
		}
	}
	s.eventsSay("RestartHeld", "-n", "drain")
	s.mustBerth("maintenance", "off")
	waitUntil(t, 30*time.Second, "the instance restarted after maintenance", func() bool {
		for _, tg := range s.taskGroups("drain", "web") {
			if tg.Spec.Index == victim.Spec.Index && tg.Metadata.Name != victim.Metadata.Name && tg.Status.Phase == v4.StatusRunning {
				return true
			}
		}
		return false
	})
}

func healthy(tg *v4.TaskGroup) bool {
	return tg.Status.Phase == v4.StatusRunning && tg.Status.Healthy != nil && *tg.Status.Healthy
}

// healthy waits for n Running and Healthy task groups of owner.
func (s *devServer) healthy(t *testing.T, ns, owner string, n int) {
	t.Helper()
	waitUntil(t, 60*time.Second, strconv.Itoa(n)+" healthy instances of "+owner, func() bool {
		tgs := s.taskGroups(ns, owner)
		count := 0
		for _, tg := range tgs {
			if healthy(tg) {
				count++
			}
		}
		return count == n && len(tgs) == n
	})
}

// longBerth runs the CLI with a longer limit than berth (a drain with --wait).
func (s *devServer) longBerth(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, berthBin, args...)
	cmd.Env = s.cliEnv(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("berth %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// sampleService runs during every ~200 ms while during runs and returns how many
// samples it took and the fewest instances of owner that were at once Running and
// Healthy in the API and answering /healthz on their port.
func (s *devServer) sampleService(t *testing.T, ns, owner string, during func()) (samples, worst int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	worst = -1
	wg.Go(func() {
		for ctx.Err() == nil {
			n, ok := s.servingNow(ns, owner)
			if ok {
				samples++
				if worst < 0 || n < worst {
					worst = n
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	during()
	cancel()
	wg.Wait()
	return samples, worst
}

// servingNow counts the instances that are Running and Healthy in the API and answer
// /healthz; ok is false when the API could not be read.
func (s *devServer) servingNow(ns, owner string) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/namespaces/"+ns+"/taskgroups", nil)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var list struct{ Items []*v4.TaskGroup }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return 0, false
	}
	n := 0
	for _, tg := range list.Items {
		if tg.Spec.Owner.Name != owner || !healthy(tg) {
			continue
		}
		if code, _, err := httpGet("http://127.0.0.1:" + strconv.Itoa(port(tg, "http")) + "/healthz"); err == nil && code == http.StatusOK {
			n++
		}
	}
	return n, true
}
