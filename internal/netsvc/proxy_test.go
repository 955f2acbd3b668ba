package netsvc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// requireNetAdmin skips a test that needs root, nft and ip, unless BERTH_REQUIRE_NFT=1
// (CI), which makes their absence a failure.
func requireNetAdmin(t testing.TB) {
	t.Helper()
	var missing string
	switch {
	case os.Geteuid() != 0:
		missing = "root"
	default:
		for _, tool := range []string{"nft", "ip"} {
			if _, err := exec.LookPath(tool); err != nil {
				missing = tool + " (apt-get install nftables iproute2)"
			}
		}
	}
	if missing == "" {
		return
	}
	if os.Getenv("BERTH_REQUIRE_NFT") == "1" {
		t.Fatalf("this test needs %s (BERTH_REQUIRE_NFT=1)", missing)
	}
	t.Skipf("this test needs %s", missing)
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// testNetns makes a network namespace joined to this one by a veth pair: the host side
// is hostIP/24, the namespace side nsIP/24, its default route. It is removed when the
// test ends.
func testNetns(t testing.TB, subnet int) (ns, hostIP, nsIP string) {
	t.Helper()
	ns = fmt.Sprintf("berth-px-%d-%d", os.Getpid(), subnet)
	host, peer := fmt.Sprintf("bpx%dh%d", os.Getpid()%10000, subnet), fmt.Sprintf("bpx%dn%d", os.Getpid()%10000, subnet)
	hostIP, nsIP = fmt.Sprintf("10.201.%d.1", subnet), fmt.Sprintf("10.201.%d.2", subnet)
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	run(t, "ip", "link", "set", peer, "netns", ns)
	run(t, "ip", "addr", "add", hostIP+"/24", "dev", host)
	run(t, "ip", "link", "set", host, "up")
	run(t, "ip", "netns", "exec", ns, "ip", "addr", "add", nsIP+"/24", "dev", peer)
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", peer, "up")
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	// A VIP needs a route, as on any node (the default route): the NAT of locally sent
	// packets happens after their route is found.
	run(t, "ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", hostIP)
	return ns, hostIP, nsIP
}

// backend serves its name over HTTP on ip, on a port of its own.
func backend(t testing.TB, ip, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// udpBackend answers each datagram on ip, on a port of its own, with name.
func udpBackend(t testing.TB, ip, name string) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(name), from)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// askUDPInNetns sends one datagram to addr from network namespace ns and returns the
// answer.
func askUDPInNetns(ns, addr string) (string, error) {
	var answer string
	err := inNetns(ns, func() error {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Write([]byte("?")); err != nil {
			return err
		}
		buf := make([]byte, 512)
		n, err := conn.Read(buf)
		answer = string(buf[:n])
		return err
	})
	return answer, err
}

// getInNetns sends GET / to addr from network namespace ns and returns the body.
func getInNetns(ns, addr string) (string, error) {
	var body string
	err := inNetns(ns, func() error {
		var err error
		body, err = fetch(addr)
		return err
	})
	return body, err
}

// vipEndpoints is service web's endpoints at vip, one instance per "ip:port".
func vipEndpoints(vip string, backends ...string) *v4.Endpoints {
	ep := &v4.Endpoints{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"}, VIP: vip}
	for i, b := range backends {
		host, port, _ := net.SplitHostPort(b)
		var p int
		fmt.Sscan(port, &p)
		ep.Endpoints = append(ep.Endpoints, v4.Endpoint{ContainerIP: host, Target: v4.TargetRef{Name: "web", Index: i},
			Ports: []v4.EndpointPort{{Name: "http", Protocol: "http", IP: host, Port: p}}})
	}
	return ep
}

// vipProxy is a proxy into network namespace ns, and its catalog: the web service, with
// VIP vip on the instances at backends.
func vipProxy(ns, vip string, backends ...string) (*Catalog, *Proxy) {
	cat := NewCatalog("cluster.local")
	cat.Put(webService())
	cat.Put(vipEndpoints(vip, backends...))
	return cat, NewProxy(cat, ProxyConfig{NetNS: "/run/netns/" + ns})
}

// The proxy forwards a VIP to the ready instances, at random or by source, and an
// instance that leaves gets no new connection: real nftables in a network namespace of
// the test's own, a client there, and backends on this side of a veth pair.
func TestProxyForwardsVIPs(t *testing.T) {
	requireNetAdmin(t)
	ns, hostIP, _ := testNetns(t, 77)
	a, b := backend(t, hostIP, "a"), backend(t, hostIP, "b")
	cat, p := vipProxy(ns, "10.254.77.1", fmt.Sprintf("%s:%d", hostIP, a), fmt.Sprintf("%s:%d", hostIP, b))
	sync := func() {
		t.Helper()
		if err := p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	fetch := func(n int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for range n {
			body, err := getInNetns(ns, "10.254.77.1:80")
			if err != nil {
				rs, _ := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", TableName).CombinedOutput()
				t.Fatalf("GET the VIP from the namespace: %v\nthe table:\n%s", err, rs)
			}
			got[body]++
		}
		return got
	}
	sync()
	// At random: 30 connections all to one of two instances would be a 1 in 500
	// million chance.
	if got := fetch(30); got["a"] == 0 || got["b"] == 0 {
		t.Errorf("at random over a and b: %v", got)
	}

	cat.Put(vipEndpoints("10.254.77.1", fmt.Sprintf("%s:%d", hostIP, b)))
	sync()
	if got := fetch(4); got["b"] != 4 {
		t.Errorf("after a left: %v, want only b", got)
	}

	svc := webService()
	svc.Metadata.Labels = map[string]string{v4.BalanceLabel: "source"}
	cat.Put(svc)
	cat.Put(vipEndpoints("10.254.77.1", fmt.Sprintf("%s:%d", hostIP, a), fmt.Sprintf("%s:%d", hostIP, b)))
	sync()
	if got := fetch(6); len(got) != 1 {
		t.Errorf("by source, one client went to %v, want one instance", got)
	}

	// UDP goes through its own map: a datagram to the VIP's UDP port reaches the
	// instance's, and the answer comes back from the VIP.
	u := udpBackend(t, hostIP, "u")
	withUDP := vipEndpoints("10.254.77.1", fmt.Sprintf("%s:%d", hostIP, a))
	withUDP.Endpoints[0].Ports = append(withUDP.Endpoints[0].Ports, v4.EndpointPort{Name: "stats", Protocol: "udp", IP: hostIP, Port: u})
	cat.Put(withUDP)
	sync()
	if got, err := askUDPInNetns(ns, "10.254.77.1:9125"); err != nil || got != "u" {
		t.Errorf("UDP through the VIP: %q, %v; want u", got, err)
	}

	// Each sync after the first changes only what changed; a service that goes takes
	// its chain and element along.
	cat.Delete(vipEndpoints("10.254.77.1"))
	sync()
	if out := run(t, "ip", "netns", "exec", ns, "nft", "list", "table", "ip", TableName); strings.Contains(out, "_rand_") || strings.Contains(out, "10.254.77.1") {
		t.Errorf("the service's chain or element is left:\n%s", out)
	}
	if body, err := getInNetns(ns, "10.254.77.1:80"); err == nil {
		t.Errorf("a service without endpoints answered: %q", body)
	}

	if err := RemoveTable(p.table.netns, ""); err != nil {
		t.Fatal(err)
	}
	if out := run(t, "ip", "netns", "exec", ns, "nft", "list", "tables"); strings.Contains(out, TableName) {
		t.Errorf("the table is still there: %s", out)
	}
}

// bigCatalog is services x instances ready instances, each service with a VIP.
func bigCatalog(services, instances int) *Catalog {
	cat := NewCatalog("cluster.local")
	for i := range services {
		name := fmt.Sprintf("svc%d", i)
		cat.Put(&v4.Service{Metadata: v4.ObjectMeta{Name: name, Namespace: "bench"},
			Spec: v4.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []v4.ServicePort{{Name: "http", ServicePort: 80}}}})
		ep := &v4.Endpoints{Metadata: v4.ObjectMeta{Name: name, Namespace: "bench"}, VIP: fmt.Sprintf("10.254.%d.%d", i/250, i%250+1)}
		for j := range instances {
			n := i*instances + j
			ip := fmt.Sprintf("10.%d.%d.%d", 100+n>>16&63, n>>8&255, n&255)
			ep.Endpoints = append(ep.Endpoints, v4.Endpoint{ContainerIP: ip, Target: v4.TargetRef{Name: name, Index: j},
				Ports: []v4.EndpointPort{{Name: "http", IP: ip, Port: 8080}}})
		}
		cat.Put(ep)
	}
	return cat
}

// BenchmarkRulesetUpdate times the proxy's updates, in a network namespace of its own
// holding the table: the whole table (the agent's start), and the one transaction that
// follows a change of one service's instances (every one of them moved), with 10,000
// instances in the cluster in several shapes.
func BenchmarkRulesetUpdate(b *testing.B) {
	requireNetAdmin(b)
	ns, _, _ := testNetns(b, 90)
	cfg := ProxyConfig{NetNS: "/run/netns/" + ns}
	for _, shape := range []struct{ services, instances int }{{1000, 10}, {1, 10000}, {10000, 1}} {
		cat := bigCatalog(shape.services, shape.instances)
		name := fmt.Sprintf("%dx%d", shape.services, shape.instances)
		b.Run("whole/"+name, func(b *testing.B) {
			for b.Loop() {
				p := NewProxy(cat, cfg)
				if err := p.Sync(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("change/"+name, func(b *testing.B) {
			p := NewProxy(cat, cfg)
			if err := p.Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
			svc0 := cat.Services()[0].Endpoints
			moved := *svc0
			moved.Endpoints = nil
			for _, e := range svc0.Endpoints {
				e.Ports = []v4.EndpointPort{{Name: "http", IP: e.Ports[0].IP, Port: 9090}}
				moved.Endpoints = append(moved.Endpoints, e)
			}
			i := 0
			for b.Loop() {
				b.StopTimer() // the catalog's own work (its names) is not the proxy's
				if i%2 == 0 {
					cat.Put(&moved)
				} else {
					cat.Put(svc0)
				}
				i++
				b.StartTimer()
				if err := p.Sync(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			cat.Put(svc0)
		})
	}
}

// An update that fails (here: someone deleted the table) leaves the proxy writing the
// whole table at its next update, and forwarding works again.
func TestProxyRewritesTheTableAfterAFailure(t *testing.T) {
	requireNetAdmin(t)
	ns, hostIP, _ := testNetns(t, 76)
	a, b := backend(t, hostIP, "a"), backend(t, hostIP, "b")
	cat, p := vipProxy(ns, "10.254.76.1", fmt.Sprintf("%s:%d", hostIP, a))
	if err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "netns", "exec", ns, "nft", "delete", "table", "ip", TableName)
	cat.Put(vipEndpoints("10.254.76.1", fmt.Sprintf("%s:%d", hostIP, b)))
	if err := p.Sync(context.Background()); err == nil {
		t.Fatal("an update of a table that is gone succeeded")
	}
	if err := p.Sync(context.Background()); err != nil {
		t.Fatalf("the whole table after a failure: %v", err)
	}
	if body, err := getInNetns(ns, "10.254.76.1:80"); err != nil || body != "b" {
		t.Errorf("the VIP after the table was written again: %q, %v; want b", body, err)
	}
}

// A VIP:port whose service has no ready instance is refused at once: a TCP connect gets
// a reset (ECONNREFUSED), a UDP datagram is rejected, instead of waiting for a timeout. An instance that comes is connected to; a connection made
// before the last instance left keeps going (only a connection's first packet is
// checked).
func TestProxyRefusesVIPsWithoutInstances(t *testing.T) {
	requireNetAdmin(t)
	ns, hostIP, _ := testNetns(t, 75)
	a := backend(t, hostIP, "a")
	cat, p := vipProxy(ns, "10.254.75.1") // the service has its VIP, no ready instance
	sync := func() {
		t.Helper()
		if err := p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(netw string) error {
		return inNetns(ns, func() error {
			conn, err := net.DialTimeout(netw, "10.254.75.1:"+map[string]string{"tcp": "80", "udp": "9125"}[netw], 2*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := conn.Write([]byte("?")); err != nil {
				return err
			}
			_, err = conn.Read(make([]byte, 64))
			return err
		})
	}
	sync()
	table := run(t, "ip", "netns", "exec", ns, "nft", "list", "table", "ip", TableName)
	if n := strings.Count(table, "ct state new ip daddr . meta l4proto . th dport vmap @no_endpoints"); n != 3 ||
		!strings.Contains(table, "10.254.75.1 . tcp . 80 : goto reject") || !strings.Contains(table, "reject with tcp reset") {
		t.Errorf("want the no_endpoints map checked on 3 hooks, the VIP:port in it and a TCP reset:\n%s", table)
	}
	for _, netw := range []string{"tcp", "udp"} {
		// A datagram the node's own process sends is dropped on its way out, and its send
		// fails at once (EPERM); one from elsewhere gets the ICMP answer.
		if err := refused(netw); !errors.Is(err, syscall.ECONNREFUSED) && (netw == "tcp" || !errors.Is(err, syscall.EPERM)) {
			table, _ := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", TableName).CombinedOutput()
			t.Errorf("%s to a VIP without instances: %v, want connection refused\nthe table:\n%s", netw, err, table)
		}
	}

	cat.Put(vipEndpoints("10.254.75.1", fmt.Sprintf("%s:%d", hostIP, a)))
	sync()
	var conn net.Conn
	if err := inNetns(ns, func() (err error) { conn, err = net.DialTimeout("tcp", "10.254.75.1:80", 2*time.Second); return err }); err != nil {
		table, _ := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", TableName).CombinedOutput()
		t.Fatalf("the VIP with an instance: %v\nthe table:\n%s", err, table)
	}
	defer conn.Close()
	ask := func() (string, error) {
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: web\r\n\r\n"); err != nil {
			return "", err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := ask(); err != nil || body != "a" {
		t.Fatalf("through the VIP: %q, %v", body, err)
	}

	cat.Put(vipEndpoints("10.254.75.1")) // the last instance leaves
	sync()
	if err := refused("tcp"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a new connection after the last instance left: %v, want connection refused", err)
	}
	if body, err := ask(); err != nil || body != "a" {
		t.Errorf("the connection made before: %q, %v; want it to go on", body, err)
	}
}

// Two clusters' proxies on one machine each write their own table (ClusterTable): both
// forward their VIPs, a full write of one leaves the other's alone, each sees the other
// as another cluster's table, and removing one leaves the other forwarding.
func TestProxyTablesOfTwoClusters(t *testing.T) {
	requireNetAdmin(t)
	ns, hostIP, _ := testNetns(t, 74)
	netns := "/run/netns/" + ns
	a, b := backend(t, hostIP, "a"), backend(t, hostIP, "b")
	tables := []string{ClusterTable("aaaaaaaaaaaa"), ClusterTable("bbbbbbbbbbbb")}
	vips := []string{"10.254.74.1", "10.254.74.2"}
	for i, port := range []int{a, b} {
		cat := NewCatalog("cluster.local")
		cat.Put(webService())
		cat.Put(vipEndpoints(vips[i], fmt.Sprintf("%s:%d", hostIP, port)))
		p := NewProxy(cat, ProxyConfig{NetNS: netns, Table: tables[i]})
		if err := p.Sync(context.Background()); err != nil {
			t.Fatalf("table %s: %v", tables[i], err)
		}
	}
	for i, want := range []string{"a", "b"} {
		if body, err := getInNetns(ns, vips[i]+":80"); err != nil || body != want {
			t.Errorf("VIP %s with both tables: %q, %v; want %s", vips[i], body, err, want)
		}
	}
	for i, table := range tables {
		other, err := OtherTables(netns, table)
		if err != nil || len(other) != 1 || other[0] != tables[1-i] {
			t.Errorf("OtherTables(%s) = %v, %v; want [%s]", table, other, err, tables[1-i])
		}
	}
	if err := RemoveTable(netns, tables[0]); err != nil {
		t.Fatal(err)
	}
	if body, err := getInNetns(ns, vips[1]+":80"); err != nil || body != "b" {
		t.Errorf("VIP %s once the other cluster's table is gone: %q, %v; want b", vips[1], body, err)
	}
	if body, err := getInNetns(ns, vips[0]+":80"); err == nil {
		t.Errorf("VIP %s answered once its table was removed: %q", vips[0], body)
	}
	if other, err := OtherTables(netns, tables[1]); err != nil || len(other) != 0 {
		t.Errorf("OtherTables after the removal: %v, %v; want none", other, err)
	}
}

func TestClusterTable(t *testing.T) {
	for _, c := range []struct{ tag, want string }{{"", TableName}, {"0123456789ab", "berth_0123456789ab"}} {
		if got := ClusterTable(c.tag); got != c.want {
			t.Errorf("ClusterTable(%q) = %q, want %q", c.tag, got, c.want)
		}
	}
}
