package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// The HA tests keep their fixed ports in 41700-41999: etcd members in 41700-41899, the
// agents' host ports in 41900-41999.
const haEtcdPorts = 41700

// haPortRange finds n consecutive ports in [lo, hi] that can be listened on now, for an
// agent's --port-range. The band lies in the kernel's ephemeral range, and the etcd
// members' many connections take source ports there: a process given a port that one
// of them holds fails to listen, again and again.
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

// memberFlags are a new member's flags; join is "" for the first server.
func memberFlags(name string, peer, clientPort int, join string) []string {
	f := []string{"--join-token", joinToken, "--etcd-name", name,
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
// connected" that a join needs: the band lies in the kernel's ephemeral range, and a
// port free at the check may be some connection's source port a few seconds later.
func startCluster(t *testing.T) []*haServer {
	t.Helper()
	var out []*haServer
	for i := range 3 {
		join := ""
		if i > 0 {
			join = out[i-1].url // any member takes a join
			time.Sleep(5500 * time.Millisecond)
		}
		name := fmt.Sprintf("s%d", i+1)
		ports := haPorts(t, 2)
		s := startBerth(t, t.TempDir(), "server", memberFlags(name, ports[0], ports[1], join)...)
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

// clusterOf reads GET /v1/cluster from one server, nil when it does not answer.
func clusterOf(url string) *client.ClusterInfo {
	c, err := client.New(url)
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
			if info := clusterOf(s.url); info != nil {
				ids[info.Self.ID] = s
				id = info.Leader
			}
		}
		leader = ids[id]
		return leader != nil
	})
	return leader, id
}

// berthServer runs `berth server` to its end (for servers that must refuse to start).
func berthServer(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, berthBin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...)...)
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

func (w *ackedWrites) run(ctx context.Context, t *testing.T, urls, ns string) {
	c, err := client.New(urls)
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

// scaleChange is "the change in progress" of the HA test: a scale-up of the process. It
// returns the wait for the change to complete (every instance Running). Once deployments
// are in, this may become a rolling update: start it, return its wait.
func scaleChange(t *testing.T, cl *devServer, ns, name string, to int) func() []*v4.TaskGroup {
	t.Helper()
	cl.mustBerth("scale", "process", name, fmt.Sprint(to), "-n", ns)
	return func() []*v4.TaskGroup { return cl.running(t, ns, name, to) }
}

// Servers that must not join are refused with a clear message and start nothing.
func TestJoinRefusals(t *testing.T) {
	ports := haPorts(t, 4)
	s1 := startBerth(t, t.TempDir(), "server", memberFlags("s1", ports[0], ports[1], "")...)
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"bad token", append(memberFlags("s2", ports[2], ports[3], s1.url)[2:], "--join-token", "wrong"), "refused the join token"},
		{"name clash", memberFlags("s1", ports[2], ports[3], s1.url), `a member named "s1" already exists`},
	} {
		out, err := berthServer(t, tc.flags...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: err %v, output:\n%s\nwant %q", tc.name, err, out, tc.want)
		}
	}
	if info := clusterOf(s1.url); info == nil || len(info.Members) != 1 || !info.Members[0].Healthy {
		t.Fatalf("refused joins changed the cluster: %+v", info)
	}
}

// Kill the leader of a 3-server cluster while a change rolls and an agent restarts: a
// new leader finishes the change, no task group is lost or duplicated, and every API
// write acknowledged before the kill (and after it) is still there on every server.
func TestLeaderKilledDuringChange(t *testing.T) {
	requireRoot(t)
	servers := startCluster(t)
	cl := &devServer{t: t, url: allURLs(servers)} // the CLI with every server
	if info := clusterOf(servers[2].url); info == nil || len(info.Members) != 3 {
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
	a := startAgent(t, servers[0].devServer, "ha-a", haPortRange(t, 41900, 41949, 10), others...)
	b := startAgent(t, servers[0].devServer, "ha-b", haPortRange(t, 41950, 41999, 10), others...)
	const ns = "ha"
	cl.cleanupProcesses(ns)
	cl.applySpec(t, webSpec{name: "web", ns: ns, instances: 3, uri: pkgs.URL + "/web-demo.tar.gz", user: "deploy", pwd: "s3cret"}.json())
	cl.running(t, ns, "web", 3)

	var writes ackedWrites
	wctx, stopWrites := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() { defer close(wdone); writes.run(wctx, t, cl.url, ns) }()
	defer func() { stopWrites(); <-wdone }()
	time.Sleep(2 * time.Second)

	leader, oldID := leaderOf(t, servers)
	var survivors []*haServer
	for _, s := range servers {
		if s != leader {
			survivors = append(survivors, s)
		}
	}
	// The leader is frozen first, so it cannot act on the change: the new leader must do
	// all of it. The change goes through the survivors (a frozen server accepts
	// connections and never answers, which no client can tell from a slow one).
	t.Logf("leader %s (%s); freezing, then killing it during a scale 3 -> 5 and an agent restart", leader.name, oldID)
	killedAt := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	wait := scaleChange(t, &devServer{t: t, url: allURLs(survivors)}, ns, "web", 5)
	b.kill()
	time.Sleep(time.Second)
	leader.cmd.Process.Kill()
	<-leader.exited
	t.Logf("at the kill: %d task groups of web", len(cl.taskGroups(ns, "web")))
	b.start()

	newLeader, newID := leaderOf(t, survivors)
	if newID == oldID {
		t.Fatalf("the killed server %s still leads", oldID)
	}
	took := time.Since(killedAt)
	t.Logf("new leader %s (%s) after %s", newLeader.name, newID, took.Round(100*time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("the new leader took %s; want about the 10 s session TTL", took)
	}

	tgs := wait()
	checkInstances(t, tgs, 5)
	time.Sleep(5 * time.Second) // a duplicate would be started by now
	checkInstances(t, cl.running(t, ns, "web", 5), 5)
	if n := webDemoProcesses(a.dataDir) + webDemoProcesses(b.dataDir); n != 5 {
		t.Errorf("%d web-demo processes run on the agents, want exactly 5", n)
	}

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
		t.Fatalf("%d writes acknowledged before the kill and %d after; want at least 10 each", before, len(names)-before)
	}
	for _, s := range survivors {
		checkWrites(t, s.devServer, ns, names)
	}

	// The killed server comes back from its data dir alone, without any etcd flag or
	// --join, as the same member, and has every acknowledged write.
	back := startBerth(t, leader.dataDir, "server", "--join-token", joinToken)
	checkWrites(t, back, ns, names)
	waitUntil(t, 30*time.Second, "three healthy members again", func() bool {
		info := clusterOf(back.url)
		if info == nil || info.Self.Member != leader.name || len(info.Members) != 3 {
			return false
		}
		for _, m := range info.Members {
			if !m.Healthy {
				return false
			}
		}
		return true
	})
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
		code, body, err := httpGet(s.url + "/v1/namespaces/" + ns + "/configmaps/" + name)
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
