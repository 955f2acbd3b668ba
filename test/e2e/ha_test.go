package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// The HA tests keep their fixed ports in 21700-21999 (below the kernel's ephemeral range,
// as every e2e band): etcd members in 21700-21899, the agents' host ports in 21900-21999.
const haEtcdPorts = 21700

// haPortRange finds n consecutive ports in [lo, hi] that can be listened on now, for an
// agent's --port-range: a process given a port that something holds fails to listen,
// again and again.
func haPortRange(t *testing.T, lo, hi, n int) string {
	t.Helper()
	run := 0
	for p := lo; p <= hi; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			run = 0
			continue
		}
		l.Close()
		if run++; run == n {
			return fmt.Sprintf("%d-%d", p-n+1, p)
		}
	}
	t.Fatalf("no %d free consecutive ports in %d-%d", n, lo, hi)
	return ""
}

// haPorts returns n free loopback ports from [haEtcdPorts, haEtcdPorts+200).
func haPorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	start := int(time.Now().UnixNano() % 200)
	for i := 0; i < 200 && len(out) < n; i++ {
		p := haEtcdPorts + (start+i)%200
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, p)
	}
	if len(out) < n {
		t.Fatalf("only %d free ports from %d", len(out), haEtcdPorts)
	}
	return out
}

// haServer is one `berth server` whose embedded etcd is a member of the test's cluster.
type haServer struct {
	*devServer
	name string
}

// memberFlags are a new member's flags; join is "" for the first server, which is given
// joinToken; a joining server is given token, the first one's DATA-DIR/join-token (with the
// cluster CA's hash, which pins the TLS of the join).
func memberFlags(name string, peer, clientPort int, join, token string) []string {
	if join == "" {
		token = joinToken
	}
	f := []string{"--join-token", token, "--etcd-name", name,
		"--etcd-peer-listen", fmt.Sprintf("127.0.0.1:%d", peer), "--etcd-client-listen", fmt.Sprintf("127.0.0.1:%d", clientPort)}
	if join != "" {
		f = append(f, "--join", join)
	}
	return f
}

// startCluster starts three servers: the first alone, then two that join it one after
// the other (each waits for /readyz, so a member is promoted before the next joins).
//
// The ports are picked just before each server starts, after etcd's 5 s of "every voter
// connected" that a join needs, so that a join goes through at once and a port free at
// the check is still free when etcd binds it.
func startCluster(t *testing.T) []*haServer {
	t.Helper()
	var out []*haServer
	for i := range 3 {
		join, token := "", ""
		if i > 0 {
			join = out[i-1].url // any member takes a join
			token = joinTokenOf(t, out[0].dataDir)
			time.Sleep(5500 * time.Millisecond)
		}
		name := fmt.Sprintf("s%d", i+1)
		ports := haPorts(t, 2)
		s := startBerth(t, t.TempDir(), "server", memberFlags(name, ports[0], ports[1], join, token)...)
		if i > 0 { // the management token is the cluster's, in the first server's data dir
			s.useToken(out[0].token)
		}
		out = append(out, &haServer{devServer: s, name: name})
	}
	return out
}

// allURLs is the comma list the CLI and the agents are given.
func allURLs(servers []*haServer) string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.url)
	}
	return strings.Join(urls, ",")
}

// allOf is a CLI and HTTPS target of every server in servers (they share one CA, so the
// first one's ca.crt verifies them all).
func allOf(t *testing.T, servers []*haServer) *devServer {
	return servers[0].via(t, allURLs(servers))
}

// clusterOf reads GET /v1/cluster from one server, nil when it does not answer.
func clusterOf(s *devServer) *cluster.Info {
	c, err := client.New(s.url, client.WithHTTPClient(s.http))
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Cluster(ctx)
	if err != nil {
		return nil
	}
	return info
}

// leaderOf finds the server whose id the election names.
func leaderOf(t *testing.T, servers []*haServer) (*haServer, string) {
	t.Helper()
	var leader *haServer
	var id string
	waitUntil(t, 30*time.Second, "a leader", func() bool {
		ids := map[string]*haServer{}
		for _, s := range servers {
			if info := clusterOf(s.devServer); info != nil {
				ids[info.Self.ID] = s
				id = info.Leader
			}
		}
		leader = ids[id]
		return leader != nil
	})
	return leader, id
}

// othersThan is servers without leader.
func othersThan(servers []*haServer, leader *haServer) []*haServer {
	var others []*haServer
	for _, s := range servers {
		if s != leader {
			others = append(others, s)
		}
	}
	return others
}

// berthServer runs `berth server` to its end (for servers that must refuse to start).
func berthServer(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, berthBin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// ackedWrites creates configmaps through a client given every server, one after the
// other, and records those the API acknowledged (201) and when.
type ackedWrites struct {
	mu    sync.Mutex
	names []string
	times []time.Time
	tries int
}

func (w *ackedWrites) run(ctx context.Context, t *testing.T, cl *devServer, ns string) {
	c, err := client.New(cl.url, client.WithHTTPClient(cl.http))
	if err != nil {
		t.Error(err)
		return
	}
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("acked-%04d", i)
		cm := &v4.ConfigMap{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindConfigMap},
			Metadata: v4.ObjectMeta{Name: name, Namespace: ns},
			Datas:    map[string]v4.ConfigMapData{"k": {Type: "file", Content: base64.StdEncoding.EncodeToString([]byte(name))}}}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Create(rctx, cm)
		cancel()
		w.mu.Lock()
		w.tries++
		if err == nil {
			w.names, w.times = append(w.names, name), append(w.times, time.Now())
		}
		w.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
}

// Servers that must not join are refused with a clear message and start nothing.
func TestJoinRefusals(t *testing.T) {
	ports := haPorts(t, 4)
	s1 := startBerth(t, t.TempDir(), "server", memberFlags("s1", ports[0], ports[1], "", "")...)
	token := joinTokenOf(t, s1.dataDir)
	_, caHash, ok := strings.Cut(token, "::")
	if !ok {
		t.Fatalf("the join token %q has no CA hash", token)
	}
	// Well formed, with the right CA hash (so TLS is pinned and the server answers), but a
	// token the cluster does not know.
	unknown := "berth-zzzzzz.0123456789abcdef0123456789abcdef::" + caHash
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"bad token", memberFlags("s2", ports[2], ports[3], s1.url, unknown), "refused the join token"},
		{"malformed token", memberFlags("s2", ports[2], ports[3], s1.url, "wrong"), "--join-token: join token:"},
		{"name clash", memberFlags("s1", ports[2], ports[3], s1.url, token), `a member named "s1" already exists`},
	} {
		out, err := berthServer(t, tc.flags...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: err %v, output:\n%s\nwant %q", tc.name, err, out, tc.want)
		}
	}
	if info := clusterOf(s1); info == nil || len(info.Members) != 1 || !info.Members[0].Healthy {
		t.Fatalf("refused joins changed the cluster: %+v", info)
	}
}

// replaceLeader kills the leader of servers while change runs through the others and
// agent b restarts, and waits for one of the others to lead. With freeze the leader is
// stopped (SIGSTOP) before the change, so it cannot act on it and the new leader does all
// of it; without, change itself waits until the change is under way, then the leader is
// killed. A frozen server accepts connections and never answers, which no client can
// tell from a slow one, so the change goes through the others only. It returns them.
func replaceLeader(t *testing.T, servers []*haServer, b *agentProc, freeze bool, change func(others *devServer)) []*haServer {
	t.Helper()
	leader, oldID := leaderOf(t, servers)
	others := othersThan(servers, leader)
	t.Logf("leader %s (%s); killing it (frozen first: %v) during a change and an agent restart", leader.name, oldID, freeze)
	at := time.Now()
	if freeze {
		if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	change(allOf(t, others))
	if !freeze {
		at = time.Now()
	}
	b.kill()
	if freeze {
		time.Sleep(time.Second)
	}
	leader.cmd.Process.Kill()
	<-leader.exited
	b.start()
	newLeader, newID := leaderOf(t, others)
	if newID == oldID {
		t.Fatalf("the killed server %s still leads", oldID)
	}
	took := time.Since(at)
	t.Logf("new leader %s (%s) after %s", newLeader.name, newID, took.Round(100*time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("the new leader took %s; want about the 10 s session TTL", took)
	}
	return others
}

// deploymentDone waits until the deployment runs revision rev with n available instances
// and no older revision's task group is left, then checks its instances, one per index,
// and that exactly n processes run on the agents.
func deploymentDone(t *testing.T, cl, live *devServer, ns string, rev, n int, agents ...*agentProc) {
	t.Helper()
	current := fmt.Sprintf("web-v%d", rev)
	waitUntil(t, 2*time.Minute, fmt.Sprintf("revision %d with %d available instances", rev, n), func() bool {
		d := live.deployment(ns, "web")
		if d.Status.Phase != v4.DeploymentRunning || d.Status.Revision != rev || d.Status.Available != n {
			return false
		}
		for r := 1; r < rev; r++ {
			if len(cl.taskGroups(ns, fmt.Sprintf("web-v%d", r))) > 0 {
				return false
			}
		}
		return true
	})
	checkInstances(t, cl.running(t, ns, current, n), n)
	time.Sleep(5 * time.Second) // a duplicate would be started by now
	checkInstances(t, cl.running(t, ns, current, n), n)
	count := 0
	for _, a := range agents {
		count += webDemoProcesses(a.dataDir)
	}
	if count != n {
		t.Errorf("%d web-demo processes run on the agents, want exactly %d", count, n)
	}
}

// Kill the leader of a 3-server cluster while a deployment rolls and an agent restarts:
// a new leader finishes the rollout, no task group is lost or duplicated, and every API
// write acknowledged before the kill (and after it) is still there on every server. The
// killed server then rejoins from its data dir alone; and the next leader, frozen and
// killed while the deployment scales up, is replaced the same way.
func TestLeaderKilledDuringChange(t *testing.T) {
	requireRoot(t)
	servers := startCluster(t)
	cl := allOf(t, servers) // the CLI with every server
	if info := clusterOf(servers[2].devServer); info == nil || len(info.Members) != 3 {
		t.Fatalf("cluster: %+v", info)
	} else {
		for _, m := range info.Members {
			if !m.Healthy || m.Learner {
				t.Fatalf("member %+v is not a healthy voter", m)
			}
		}
	}
	pkgs := packageServer(t)
	others := []string{"--server", servers[1].url + "," + servers[2].url}
	a := startAgent(t, servers[0].devServer, "ha-a", haPortRange(t, 21900, 21949, 10), others...)
	b := startAgent(t, servers[0].devServer, "ha-b", haPortRange(t, 21950, 21999, 10), others...)
	const ns = "ha"
	cl.cleanupDeployments(ns)
	web := webDemo(pkgs, ns, "web", 3)
	// Steps 2 s apart, so that a rollout of 3 instances lasts long enough to be killed in.
	const strategy = `{"type":"RollingUpdate","rollingupdate":{"maxUnavailable":1,"maxSurge":1,"upgradeDuration":2,"stepDeadline":120}}`
	cl.applySpec(t, deploymentSpec(t, web, "one", strategy))
	cl.running(t, ns, "web-v1", 3)

	var writes ackedWrites
	wctx, stopWrites := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() { defer close(wdone); writes.run(wctx, t, cl, ns) }()
	defer func() { stopWrites(); <-wdone }()
	time.Sleep(2 * time.Second)

	// 1. A rollout to version two is under way (its first instance exists) when the
	// leader is killed.
	var killedAt time.Time
	first := servers
	servers = replaceLeader(t, servers, b, false, func(via *devServer) {
		via.applySpec(t, deploymentSpec(t, web, "two", strategy))
		waitUntil(t, 30*time.Second, "the rollout under way", func() bool { return len(via.taskGroups(ns, "web-v2")) > 0 })
		killedAt = time.Now()
		t.Logf("at the kill: %d task groups of version one, %d of version two", len(via.taskGroups(ns, "web-v1")), len(via.taskGroups(ns, "web-v2")))
	})
	deploymentDone(t, cl, servers[0].devServer, ns, 2, 3, a, b)

	// 2. The killed server comes back from its data dir alone, without any etcd flag or
	// --join, as the same member.
	var killed *haServer
	for _, s := range first {
		if !slices.Contains(servers, s) {
			killed = s
		}
	}
	back := &haServer{devServer: startServer(t, killed.dataDir), name: killed.name}
	back.useToken(servers[0].token)
	servers = append(servers, back)
	// Cleanups run last-registered first: this one runs before back is killed, while the
	// cluster still has its quorum (the first one, after two kills, would find none).
	allOf(t, servers).cleanupDeployments(ns)
	waitUntil(t, 30*time.Second, "three healthy members again", func() bool {
		info := clusterOf(back.devServer)
		if info == nil || info.Self.Member != killed.name || len(info.Members) != 3 {
			return false
		}
		for _, m := range info.Members {
			if !m.Healthy {
				return false
			}
		}
		return true
	})

	// 3. The next leader is frozen, the deployment scaled 3 -> 5 through the others, and
	// the leader killed: the new one does the whole scale-up.
	servers = replaceLeader(t, servers, b, true, func(via *devServer) {
		via.mustBerth("scale", "deployment", "web", "5", "-n", ns)
	})
	cl = allOf(t, servers)
	deploymentDone(t, cl, servers[0].devServer, ns, 2, 5, a, b)

	stopWrites()
	<-wdone
	writes.mu.Lock()
	names, times := writes.names, writes.times
	t.Logf("%d of %d writes acknowledged", len(names), writes.tries)
	writes.mu.Unlock()
	before := 0
	for _, at := range times {
		if at.Before(killedAt) {
			before++
		}
	}
	if before < 10 || len(names)-before < 10 {
		t.Fatalf("%d writes acknowledged before the first kill and %d after; want at least 10 each", before, len(names)-before)
	}
	for _, s := range servers { // the restarted server included
		checkWrites(t, s.devServer, ns, names)
	}
}

// checkInstances requires n Running task groups, one for each index 0..n-1.
func checkInstances(t *testing.T, tgs []*v4.TaskGroup, n int) {
	t.Helper()
	var idx []int
	for _, tg := range tgs {
		if tg.Status.Phase != v4.StatusRunning {
			t.Errorf("%s is %s", tg.Metadata.Name, tg.Status.Phase)
		}
		idx = append(idx, tg.Spec.Index)
	}
	slices.Sort(idx)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(idx, want) {
		t.Errorf("task group indexes %v, want %v (one each)", idx, want)
	}
}

// checkWrites reads every acknowledged configmap from one server (no failover).
func checkWrites(t *testing.T, s *devServer, ns string, names []string) {
	t.Helper()
	missing := 0
	for _, name := range names {
		code, body, err := s.httpGet(s.url + "/v1/namespaces/" + ns + "/configmaps/" + name)
		if err != nil || code != http.StatusOK {
			missing++
			if missing <= 3 {
				t.Errorf("%s on %s: %d %v %s", name, s.url, code, err, body)
			}
			continue
		}
		var cm v4.ConfigMap
		if err := json.Unmarshal([]byte(body), &cm); err != nil || cm.Datas["k"].Content != base64.StdEncoding.EncodeToString([]byte(name)) {
			t.Errorf("%s on %s: %v %s", name, s.url, err, body)
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged writes missing on %s", missing, len(names), s.url)
	}
}
