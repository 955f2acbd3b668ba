package e2e

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/netsvc"
	"github.com/berthhq/berth/internal/pki"
)

// proxyTableOf is the service proxy table of the cluster whose server keeps its data in
// dataDir: its CA's tag (docs/agent.md, "Ownership"). "" before the CA is written.
func proxyTableOf(dataDir string) string {
	b, err := os.ReadFile(caFileOf(dataDir))
	if err != nil {
		return ""
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return ""
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return ""
	}
	return netsvc.ClusterTable(driver.Owner{Cluster: pki.Hash(ca)}.Tag())
}

// removeProxyTable removes the service proxy table of dataDir's cluster, which a berth
// dev that was killed (not stopped) leaves: it would answer a later cluster's VIPs.
func removeProxyTable(dataDir string) {
	if table := proxyTableOf(dataDir); table != "" {
		exec.Command("nft", "delete", "table", "ip", table).Run()
	}
}

// hasTable reports whether nftables table ip name is there.
func hasTable(name string) bool { return exec.Command("nft", "list", "table", "ip", name).Run() == nil }

// getVIP fetches http://addr/ from the test (which runs on the node) and returns the body.
func getVIP(addr string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

// lookupA asks the DNS server at addr for name's A records.
func lookupA(t *testing.T, addr, name string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	resp, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return nil
	}
	var out []string
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out
}

// serviceAddrs are the addresses a name of service ns/name may answer: its VIP, or the
// addresses of its instances (the name answers the one or the other).
func (s *devServer) serviceAddrs(t *testing.T, ns, name string) []string {
	t.Helper()
	var ep v4.Endpoints
	if err := json.Unmarshal([]byte(s.mustBerth("get", "endpoints", name, "-n", ns, "-o", "json")), &ep); err != nil {
		t.Fatal(err)
	}
	addrs := []string{ep.VIP}
	for _, e := range ep.Endpoints {
		for _, p := range e.Ports {
			addrs = append(addrs, p.IP)
		}
	}
	return addrs
}

// answersOf reports whether got is a non-empty answer of addresses among allowed.
func answersOf(got, allowed []string) bool {
	return len(got) > 0 && !slices.ContainsFunc(got, func(a string) bool { return !slices.Contains(allowed, a) })
}

// dnsOf is the cluster DNS server a process instance was told of (BERTH_DNS).
func dnsOf(t *testing.T, tg *v4.TaskGroup) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pidOf(tg)) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "BERTH_DNS="); ok {
			return v
		}
	}
	t.Fatalf("the process of %s has no BERTH_DNS: berth dev runs no DNS server", tg.Metadata.Name)
	return ""
}

// webService applies a process instance serving body and service web in front of it,
// and returns the running instance and the service's VIP.
func (s *devServer) webService(t *testing.T, ns, body string) (*v4.TaskGroup, string) {
	t.Helper()
	s.applySpec(t, httpdProcess{name: "web", ns: ns, instances: 1, prepare: "echo " + body + " > www/index.html", cpu: "0.1"}.json())
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"web","namespace":%q},
		"spec":{"selector":{"app":"web"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, ns))
	return s.running(t, ns, "web", 1)[0], s.serviceVIP(t, ns, "web")
}

// Services under `berth dev` as root: its node runs the cluster DNS server and the
// service proxy with no flag, so a process instance behind a service is reached at the
// service's VIP:port from the node (this test) and from a container, and the service's
// name resolves through the node's DNS server (to the VIP or the instance's address:
// either is the name's answer). A second berth dev on the machine starts beside it with
// its own DNS address and its own proxy table, forwards its own VIPs (another
// --service-cidr), and removes only its table when it stops.
func TestDevServices(t *testing.T) {
	requireDocker(t)
	// The client has a namespace of its own: each cleanup waits for its namespace's
	// task groups to go.
	const ns, clientNS = "devsvc", "devsvc-client"
	// A range of its own: other clusters on the machine (other tests' agents) give out
	// the default range's VIPs, and the older table of two answers a VIP both hold.
	a := startDev(t, filepath.Join(t.TempDir(), "a"), "--port-range", "29500-29549", "--service-cidr", "10.252.0.0/16")
	a.cleanupProcesses(ns)
	a.cleanupApps(clientNS)
	tableA := proxyTableOf(a.dataDir)
	waitUntil(t, 30*time.Second, "table ip "+tableA, func() bool { return hasTable(tableA) })

	web, vip := a.webService(t, ns, "dev-a")
	waitUntil(t, 30*time.Second, "the VIP "+vip+" to answer the node", func() bool {
		body, err := getVIP(vip + ":80")
		return err == nil && body == "dev-a"
	})
	a.applySpec(t, appSpec{name: "client", ns: clientNS, containers: []string{container("main", "exec sleep 3600", "")}}.json())
	client := containerIDs(a.running(t, clientNS, "client", 1)[0])[0]
	waitUntil(t, 30*time.Second, "the VIP "+vip+" to answer a container", func() bool {
		out, err := exec.Command("docker", "exec", client, "wget", "-qO-", "http://"+vip+"/").CombinedOutput()
		return err == nil && strings.TrimSpace(string(out)) == "dev-a"
	})

	dnsA := dnsOf(t, web)
	name := "web." + ns + ".svc.cluster.local"
	allowed := a.serviceAddrs(t, ns, "web")
	var got []string
	waitUntil(t, 30*time.Second, name+" to resolve through "+dnsA, func() bool {
		got = lookupA(t, dnsA, name)
		return answersOf(got, allowed)
	})
	_, port, _ := net.SplitHostPort(dnsA)
	if port == "53" { // containers are given the node's DNS server only on port 53
		waitUntil(t, 30*time.Second, "web."+ns+" to resolve in the container", func() bool {
			return answersOf(nslookup(client, "web."+ns), allowed)
		})
	} else {
		t.Logf("port 53 of the node was taken (another berth dev?): berth dev's DNS is on %s; containers keep Docker's resolver", dnsA)
	}

	// A second berth dev: another cluster, its own range of VIPs.
	b := startDev(t, filepath.Join(t.TempDir(), "b"), "--port-range", "29550-29599", "--service-cidr", "10.253.0.0/16")
	b.cleanupProcesses(ns)
	tableB := proxyTableOf(b.dataDir)
	if tableB == tableA {
		t.Fatalf("two clusters share table %s", tableA)
	}
	webB, vipB := b.webService(t, ns, "dev-b")
	waitUntil(t, 30*time.Second, "the second cluster's VIP "+vipB, func() bool {
		body, err := getVIP(vipB + ":80")
		return err == nil && body == "dev-b"
	})
	dnsB := dnsOf(t, webB)
	if dnsB == dnsA || (port == "53" && !strings.HasPrefix(dnsB, "127.0.0.1:")) {
		t.Errorf("the second berth dev's DNS server is on %s (the first's: %s), want a port of its own on 127.0.0.1", dnsB, dnsA)
	}
	if !hasTable(tableA) || !hasTable(tableB) {
		t.Errorf("tables %s and %s are not both there", tableA, tableB)
	}
	if body, err := getVIP(vip + ":80"); err != nil || body != "dev-a" {
		t.Errorf("the first cluster's VIP with the second running: %q, %v", body, err)
	}

	// Stopped, the second removes its own table only.
	b.mustBerth("delete", "process", "web", "-n", ns)
	waitUntil(t, 30*time.Second, "the second cluster's instance to go", func() bool {
		return strings.TrimSpace(b.berth("", "get", "taskgroups", "-n", ns, "-o", "name").stdout) == ""
	})
	b.stop()
	if hasTable(tableB) {
		t.Errorf("table %s is left after its berth dev stopped", tableB)
	}
	if body, err := getVIP(vip + ":80"); err != nil || body != "dev-a" {
		t.Errorf("the first cluster's VIP once the second stopped: %q, %v", body, err)
	}
	logs := b.logs.String() // complete once the process exited
	for _, want := range []string{"DNS:      " + dnsB, "proxy:    on:", "nft list table ip " + tableB, "its table removed"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the second berth dev's output lacks %q:\n%s", want, logs)
		}
	}
	if port == "53" && !strings.Contains(logs, "cluster DNS server not on port 53 of the node") {
		t.Errorf("the second berth dev did not say why its DNS server is not on port 53:\n%s", logs)
	}
	devNamesAndScale(t, a, ns, vip, dnsA, client, port == "53")
}

// devNamesAndScale, under berth dev: the service's Kubernetes-style name answers its VIP
// and BCS's short form asked as written its instance; from a container, the short names
// reach the VIP through the search list; a service without a ready instance refuses a
// connection at once, as web's VIP does while web is scaled to zero; scaled back, the VIP
// answers again.
func devNamesAndScale(t *testing.T, s *devServer, ns, vip, dns, client string, port53 bool) {
	t.Helper()
	var instances []string
	for _, a := range s.serviceAddrs(t, ns, "web") {
		if a != vip {
			instances = append(instances, a)
		}
	}
	if got := lookupA(t, dns, "web."+ns+".svc.cluster.local"); !slices.Equal(got, []string{vip}) {
		t.Errorf("web.%s.svc.cluster.local: %v, want the VIP %s", ns, got, vip)
	}
	if got := lookupA(t, dns, "web."+ns); !answersOf(got, instances) {
		t.Errorf("BCS's web.%s asked as written: %v, want the instance's %v", ns, got, instances)
	}
	if port53 { // the instance listens on a random host port: port 80 is the VIP's
		for _, name := range []string{"web." + ns, "web." + ns + ".svc", "web." + ns + ".svc.cluster.local"} {
			if out, err := exec.Command("docker", "exec", client, "wget", "-qO-", "http://"+name+"/").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "dev-a" {
				t.Errorf("wget http://%s/ in a container: %q %v", name, out, err)
			}
		}
	}
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"nobody","namespace":%q},
		"spec":{"selector":{"app":"nobody"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, ns))
	refusedFast(t, s.serviceVIP(t, ns, "nobody")+":80", "a service without instances")

	s.mustBerth("scale", "process", "web", "0", "-n", ns)
	waitUntil(t, 30*time.Second, "web scaled to zero", func() bool {
		return strings.TrimSpace(s.berth("", "get", "taskgroups", "-n", ns, "-o", "name").stdout) == ""
	})
	waitUntil(t, 10*time.Second, "web's VIP to refuse", func() bool { refused, _, _ := dialVIP(vip + ":80"); return refused })
	refusedFast(t, vip+":80", "web scaled to zero")
	if out := s.mustBerth("get", "process", "web", "-n", ns); !strings.Contains(out, "Stopped") {
		t.Errorf("web at zero instances:\n%s", out)
	}
	s.mustBerth("scale", "process", "web", "1", "-n", ns)
	waitUntil(t, 60*time.Second, "web's VIP to answer again", func() bool {
		body, err := getVIP(vip + ":80")
		return err == nil && body == "dev-a"
	})
}
