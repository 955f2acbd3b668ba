package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// simNodes is how many simulated nodes heartbeat through the cluster while its leader is
// killed.
const simNodes = 100

// TestHeartbeatsSurviveLeaderKill: 100 simulated nodes (`berth sim`, real agents over fake
// drivers) heartbeat through a 3-server cluster, spread over its servers; the leader is
// killed. The agents of the killed server move to the others, the new leader takes the
// nodes' liveness over from etcd's leases, and no node is marked Lost, during the
// failover or two TTLs after it.
func TestHeartbeatsSurviveLeaderKill(t *testing.T) {
	servers := startCluster(t)
	cl := allOf(t, servers)
	cl.startSim(t, servers[0].dataDir, "--nodes", strconv.Itoa(simNodes), "--prefix", "hb", "--ramp", "5s", "--heartbeat", "3s")
	readyOn := func(cl *devServer) int {
		var list struct{ Items []v4.Node }
		r := cl.berth("", "get", "nodes", "-o", "json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil {
			return -1
		}
		n := 0
		for _, node := range list.Items {
			if strings.HasPrefix(node.Metadata.Name, "hb") && node.Status.Phase == v4.NodeReady {
				n++
			}
		}
		return n
	}
	waitUntil(t, 90*time.Second, "100 simulated nodes Ready", func() bool { return readyOn(cl) == simNodes })

	leader, oldID := leaderOf(t, servers)
	others := othersThan(servers, leader)
	t.Logf("killing the leader %s (%s) under %d heartbeating nodes", leader.name, oldID, simNodes)
	leader.cmd.Process.Kill()
	<-leader.exited
	newLeader, _ := leaderOf(t, others)
	t.Logf("new leader %s", newLeader.name)
	live := allOf(t, others)
	// A new leader waits one TTL (10 s) before it declares any loss: look for two more.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var list struct{ Items []v4.Node }
		if r := live.berth("", "get", "nodes", "-o", "json"); r.code == 0 && json.Unmarshal([]byte(r.stdout), &list) == nil {
			for _, node := range list.Items {
				if strings.HasPrefix(node.Metadata.Name, "hb") && node.Status.Phase != v4.NodeReady {
					t.Fatalf("node %s is %s after the leader was killed", node.Metadata.Name, node.Status.Phase)
				}
			}
		}
		time.Sleep(time.Second)
	}
	var events struct{ Items []v4.Event }
	if err := json.Unmarshal([]byte(live.mustBerth("events", "-A", "-o", "json")), &events); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Reason == "NodeLost" && strings.HasPrefix(ev.Name, "hb") {
			t.Errorf("%s: %s", ev.Name, ev.Message)
		}
	}
	if n := readyOn(live); n != simNodes {
		t.Fatalf("%d of %d simulated nodes Ready at the end", n, simNodes)
	}
}
