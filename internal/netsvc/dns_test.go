package netsvc

import (
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	v4 "github.com/berthhq/berth/api/v4"
)

func webService() *v4.Service {
	return &v4.Service{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: v4.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: []string{"10.9.0.1"},
			Ports: []v4.ServicePort{{Name: "http", Protocol: "http", ServicePort: 80}, {Name: "stats", Protocol: "udp", ServicePort: 9125}}}}
}

func webEndpoints(ips ...string) *v4.Endpoints {
	ep := &v4.Endpoints{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"}}
	for i, ip := range ips {
		ep.Endpoints = append(ep.Endpoints, v4.Endpoint{ContainerIP: ip,
			Target: v4.TargetRef{Kind: v4.KindApplication, Name: "web", Namespace: "demo", Index: i},
			Ports:  []v4.EndpointPort{{Name: "http", Protocol: "http", IP: ip, Port: 8080 + i}}})
	}
	ep.NotReady = []v4.Endpoint{{ContainerIP: "172.17.0.99", Target: v4.TargetRef{Name: "web", Index: 9},
		Ports: []v4.EndpointPort{{Name: "http", IP: "172.17.0.99", Port: 8080}}, Reason: "Starting"}}
	return ep
}

// startDNS serves cat on a loopback port, forwarding to upstreams.
func startDNS(t *testing.T, cat *Catalog, upstreams ...string) *DNSServer {
	t.Helper()
	s, err := NewDNSServer(cat, DNSConfig{Addr: "127.0.0.1:0", Upstreams: upstreams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func query(t *testing.T, addr, name string, qtype uint16, netw string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: netw}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return resp
}

// ips returns the sorted addresses of the A and AAAA answers.
func ips(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch r := rr.(type) {
		case *dns.A:
			out = append(out, r.A.String())
		case *dns.AAAA:
			out = append(out, r.AAAA.String())
		}
	}
	slices.Sort(out)
	return out
}

func TestClusterNames(t *testing.T) {
	cat := NewCatalog("cluster.local")
	cat.Put(webService())
	cat.Put(webEndpoints("172.17.0.2", "172.17.0.3"))
	addr := startDNS(t, cat).Addr()

	all := []string{"10.9.0.1", "172.17.0.2", "172.17.0.3"}
	tests := []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, all},
		{"WEB.Demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, all},
		{"web.demo", dns.TypeA, dns.RcodeSuccess, all},
		{"web.demo.svc", dns.TypeA, dns.RcodeSuccess, all},
		{"1-web.web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"172.17.0.3"}},
		{"9-web.web.demo.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil}, // not ready
		{"web.demo.svc.cluster.local", dns.TypeAAAA, dns.RcodeSuccess, nil},      // no data
		{"api.demo.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil},
		{"web.other.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil},
	}
	for _, tt := range tests {
		for _, netw := range []string{"udp", "tcp"} {
			m := query(t, addr, tt.name, tt.qtype, netw)
			if m.Rcode != tt.rcode || !slices.Equal(ips(m), tt.want) {
				t.Errorf("%s %s over %s: rcode %s, %v; want %s, %v", tt.name, dns.TypeToString[tt.qtype], netw,
					dns.RcodeToString[m.Rcode], ips(m), dns.RcodeToString[tt.rcode], tt.want)
			}
			if m.Rcode == dns.RcodeSuccess && !m.Authoritative {
				t.Errorf("%s: the answer is not authoritative", tt.name)
			}
		}
	}

	m := query(t, addr, "_http._tcp.web.demo.svc.cluster.local", dns.TypeSRV, "udp")
	var got []string
	for _, rr := range m.Answer {
		srv := rr.(*dns.SRV)
		got = append(got, fmt.Sprintf("%s:%d", srv.Target, srv.Port))
	}
	slices.Sort(got)
	if want := []string{"0-web.web.demo.svc.cluster.local.:8080", "1-web.web.demo.svc.cluster.local.:8081"}; !slices.Equal(got, want) || len(m.Extra) != 2 {
		t.Errorf("SRV answer %v with %d extra records; want %v and 2", got, len(m.Extra), want)
	}
	if m := query(t, addr, "_stats._udp.web.demo", dns.TypeSRV, "udp"); m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 {
		t.Errorf("SRV of a port no instance has: %s with %d answers, want no data", dns.RcodeToString[m.Rcode], len(m.Answer))
	}
}

// The service's own name answers as Kubernetes: the VIP alone for a service of type
// ClusterIP whose VIP is given, else (type None, or no VIP yet) its ready instances and
// clusterIP entries. BCS's short forms, asked as absolute names, keep BCS's answer (the
// instances and clusterIP entries) whatever the type; the SRV and instance names are the
// same for all.
func TestServiceNamesByKind(t *testing.T) {
	withVIP := func() (*v4.Service, *v4.Endpoints) {
		ep := webEndpoints("172.17.0.2", "172.17.0.3")
		ep.VIP = "10.254.0.7"
		return webService(), ep
	}
	noVIP := func() (*v4.Service, *v4.Endpoints) { return webService(), webEndpoints("172.17.0.2", "172.17.0.3") }
	headless := func() (*v4.Service, *v4.Endpoints) {
		svc, ep := withVIP() // a VIP left from an earlier type ClusterIP is not the name's
		svc.Spec.Type = "None"
		return svc, ep
	}
	vipNoInstance := func() (*v4.Service, *v4.Endpoints) {
		svc, ep := withVIP()
		ep.Endpoints = nil
		return svc, ep
	}
	bcs := []string{"10.9.0.1", "172.17.0.2", "172.17.0.3"}
	srv := []string{"0-web.web.demo.svc.cluster.local.:8080", "1-web.web.demo.svc.cluster.local.:8081"}
	tests := []struct {
		kind    string
		objects func() (*v4.Service, *v4.Endpoints)
		name    string
		qtype   uint16
		rcode   int
		want    []string // addresses, or SRV target:port
	}{
		{"VIP", withVIP, "web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"10.254.0.7"}},
		{"VIP", withVIP, "web.demo.svc.cluster.local", dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"VIP", withVIP, "web.demo", dns.TypeA, dns.RcodeSuccess, bcs},
		{"VIP", withVIP, "web.demo.svc", dns.TypeA, dns.RcodeSuccess, bcs},
		{"VIP", withVIP, "1-web.web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"172.17.0.3"}},
		{"VIP", withVIP, "0-web.web.demo", dns.TypeA, dns.RcodeSuccess, []string{"172.17.0.2"}},
		{"VIP", withVIP, "_http._tcp.web.demo.svc.cluster.local", dns.TypeSRV, dns.RcodeSuccess, srv},
		{"VIP", withVIP, "_http._tcp.web.demo.svc", dns.TypeSRV, dns.RcodeSuccess, srv},
		{"VIP", withVIP, "web.demo.demo.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil}, // a search list's first try
		{"VIP, no instance", vipNoInstance, "web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"10.254.0.7"}},
		{"VIP, no instance", vipNoInstance, "web.demo", dns.TypeA, dns.RcodeSuccess, []string{"10.9.0.1"}},
		{"no VIP yet", noVIP, "web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, bcs},
		{"no VIP yet", noVIP, "web.demo", dns.TypeA, dns.RcodeSuccess, bcs},
		{"type None", headless, "web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, bcs},
		{"type None", headless, "web.demo.svc", dns.TypeA, dns.RcodeSuccess, bcs},
		{"type None", headless, "_http._tcp.web.demo.svc.cluster.local", dns.TypeSRV, dns.RcodeSuccess, srv},
		{"type None", headless, "1-web.web.demo.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"172.17.0.3"}},
	}
	for _, tt := range tests {
		cat := NewCatalog("cluster.local")
		svc, ep := tt.objects()
		cat.Put(svc)
		cat.Put(ep)
		addr := startDNS(t, cat).Addr()
		m := query(t, addr, tt.name, tt.qtype, "udp")
		got := ips(m)
		if tt.qtype == dns.TypeSRV {
			got = srvTargets(m)
		}
		if m.Rcode != tt.rcode || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %s %s: rcode %s, %v; want %s, %v", tt.kind, tt.name, dns.TypeToString[tt.qtype],
				dns.RcodeToString[m.Rcode], got, dns.RcodeToString[tt.rcode], tt.want)
		}
	}
}

// srvTargets returns the sorted target:port of the SRV answers.
func srvTargets(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if srv, ok := rr.(*dns.SRV); ok {
			out = append(out, fmt.Sprintf("%s:%d", srv.Target, srv.Port))
		}
	}
	slices.Sort(out)
	return out
}

// Answers follow the catalog: an instance that leaves the endpoints leaves the answer,
// and a deleted service's names go.
func TestNamesFollowTheCatalog(t *testing.T) {
	cat := NewCatalog("cluster.local")
	cat.Put(webService())
	cat.Put(webEndpoints("172.17.0.2", "172.17.0.3"))
	addr := startDNS(t, cat).Addr()

	cat.Put(webEndpoints("172.17.0.2"))
	if got := ips(query(t, addr, "web.demo", dns.TypeA, "udp")); !slices.Equal(got, []string{"10.9.0.1", "172.17.0.2"}) {
		t.Errorf("after an instance left: %v", got)
	}
	cat.Replace(v4.KindEndpoint, nil)
	if got := ips(query(t, addr, "web.demo", dns.TypeA, "udp")); !slices.Equal(got, []string{"10.9.0.1"}) {
		t.Errorf("after the endpoints went: %v", got)
	}
	cat.Delete(webService())
	if m := query(t, addr, "web.demo.svc.cluster.local", dns.TypeA, "udp"); m.Rcode != dns.RcodeNameError {
		t.Errorf("a deleted service answers %s", dns.RcodeToString[m.Rcode])
	}
}

// upstream is a test resolver on loopback that answers every A query with 192.0.2.1 and
// counts the queries it gets.
func upstream(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		n.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "missing.example.org." {
			m.Rcode = dns.RcodeNameError
		} else {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A: net.ParseIP("192.0.2.1")}}
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String(), &n
}

func TestForwardingAndItsCache(t *testing.T) {
	up, queries := upstream(t)
	addr := startDNS(t, NewCatalog("cluster.local"), up).Addr()
	for range 3 {
		if got := ips(query(t, addr, "www.example.org", dns.TypeA, "udp")); !slices.Equal(got, []string{"192.0.2.1"}) {
			t.Fatalf("forwarded answer %v", got)
		}
	}
	if m := query(t, addr, "missing.example.org", dns.TypeA, "tcp"); m.Rcode != dns.RcodeNameError {
		t.Errorf("a missing name forwarded: %s", dns.RcodeToString[m.Rcode])
	}
	query(t, addr, "missing.example.org", dns.TypeA, "udp")
	if n := queries.Load(); n != 2 {
		t.Errorf("%d upstream queries for 5 queries of 2 names, want 2 (the rest from the cache)", n)
	}
	// A service-like name in a namespace without that service is someone else's.
	if got := ips(query(t, addr, "web.demo", dns.TypeA, "udp")); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("web.demo without such a service: %v, want the upstream's answer", got)
	}

	if m := query(t, startDNS(t, NewCatalog("cluster.local")).Addr(), "www.example.org", dns.TypeA, "udp"); m.Rcode != dns.RcodeRefused {
		t.Errorf("without upstreams: %s, want REFUSED", dns.RcodeToString[m.Rcode])
	}
	dead, err := net.ListenPacket("udp", "127.0.0.1:0") // answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	s, err := NewDNSServer(NewCatalog("cluster.local"), DNSConfig{Addr: "127.0.0.1:0", Upstreams: []string{dead.LocalAddr().String()}, ForwardTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := query(t, s.Addr(), "www.example.org", dns.TypeA, "udp"); m.Rcode != dns.RcodeServerFailure {
		t.Errorf("with a silent upstream: %s, want SERVFAIL", dns.RcodeToString[m.Rcode])
	}
}

// A service's clusterIP entries that are names are resolved at each query, through the
// cluster's own names or the upstreams, and merged into its BCS answer.
func TestClusterIPNamesAreMerged(t *testing.T) {
	up, _ := upstream(t)
	cat := NewCatalog("cluster.local")
	api := &v4.Service{Metadata: v4.ObjectMeta{Name: "api", Namespace: "demo"},
		Spec: v4.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []v4.ServicePort{{Name: "http", ServicePort: 80}}}}
	cat.Put(api)
	// api has a VIP: a clusterIP entry naming it still merges its instances (BCS's answer).
	cat.Put(&v4.Endpoints{Metadata: v4.ObjectMeta{Name: "api", Namespace: "demo"}, VIP: "10.254.0.9", Endpoints: []v4.Endpoint{{ContainerIP: "172.17.0.9",
		Target: v4.TargetRef{Name: "api"}, Ports: []v4.EndpointPort{{Name: "http", IP: "172.17.0.9", Port: 80}}}}})
	web := webService()
	web.Spec.ClusterIP = []string{"10.9.0.1", "db.example.org", "api.demo.svc.cluster.local"}
	cat.Put(web)
	addr := startDNS(t, cat, up).Addr()
	want := []string{"10.9.0.1", "172.17.0.9", "192.0.2.1"}
	if got := ips(query(t, addr, "web.demo", dns.TypeA, "udp")); !slices.Equal(got, want) {
		t.Errorf("web.demo with names among its cluster IPs: %v, want %v", got, want)
	}
}

// A service of 10,000 instances answers over TCP with as many as a DNS message holds,
// and over UDP with a truncated answer (the client asks again over TCP).
func TestHugeServiceAnswers(t *testing.T) {
	cat := NewCatalog("cluster.local")
	cat.Put(webService())
	var addrs []string
	for i := range 10000 {
		addrs = append(addrs, fmt.Sprintf("10.%d.%d.%d", 100+i>>16, i>>8&255, i&255))
	}
	cat.Put(webEndpoints(addrs...))
	addr := startDNS(t, cat).Addr()
	m := query(t, addr, "web.demo.svc.cluster.local", dns.TypeA, "tcp")
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) < 1000 || len(m.Answer) > 10001 {
		t.Errorf("over TCP: %s with %d answers", dns.RcodeToString[m.Rcode], len(m.Answer))
	}
	c := &dns.Client{Net: "udp"}
	req := new(dns.Msg)
	req.SetQuestion("web.demo.svc.cluster.local.", dns.TypeA)
	resp, _, err := c.Exchange(req, addr)
	if err != nil || !resp.Truncated {
		t.Errorf("over UDP: truncated %v, err %v", resp != nil && resp.Truncated, err)
	}
}

// Forwarded queries waiting for an upstream are bounded: beyond maxInflight, SERVFAIL
// at once; cached answers are still served.
func TestForwardingIsBounded(t *testing.T) {
	up, _ := upstream(t)
	s := startDNS(t, NewCatalog("cluster.local"), up)
	query(t, s.Addr(), "cached.example.org", dns.TypeA, "udp")
	for range maxInflight { // as many queries as allowed wait on the upstream
		s.fwd.inflight <- struct{}{}
	}
	if m := query(t, s.Addr(), "new.example.org", dns.TypeA, "udp"); m.Rcode != dns.RcodeServerFailure {
		t.Errorf("a query beyond the bound: %s, want SERVFAIL", dns.RcodeToString[m.Rcode])
	}
	if got := ips(query(t, s.Addr(), "cached.example.org", dns.TypeA, "udp")); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("a cached name while full: %v", got)
	}
	for range maxInflight {
		<-s.fwd.inflight
	}
	if got := ips(query(t, s.Addr(), "new.example.org", dns.TypeA, "udp")); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("after the flood: %v", got)
	}
}
