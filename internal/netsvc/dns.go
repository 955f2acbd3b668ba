package netsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// answerTTL is the TTL of the cluster's records: short, since instances come and go,
// and the node-local server answers in microseconds anyway.
const answerTTL = 5

// DNSConfig configures a DNS server.
type DNSConfig struct {
	// Addr is where it listens, UDP and TCP ("10.0.0.5:53"; port 0 picks one).
	Addr string
	// Upstreams are the resolvers other names are forwarded to ("10.0.0.1:53"); none:
	// such names are refused.
	Upstreams []string
	Logger    *slog.Logger
	// ForwardTimeout bounds one forwarded query (default 2 s).
	ForwardTimeout time.Duration
	// CacheSize bounds the forwarded answers kept (default 10,000).
	CacheSize int
}

// DNSServer answers for the services of a Catalog and forwards every other name to the
// node's upstream resolvers, caching their answers: the node-local cluster resolver
// (docs/services.md, "Names").
type DNSServer struct {
	cat     *Catalog
	log     *slog.Logger
	fwd     *forwarder
	udp     *dns.Server
	tcp     *dns.Server
	addr    string
	stopped sync.Once
	done    chan struct{}
}

// NewDNSServer listens on cfg.Addr (UDP and TCP, the same port) and serves until
// Close.
func NewDNSServer(cat *Catalog, cfg DNSConfig) (*DNSServer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pc, ln, err := listenDNS(cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &DNSServer{cat: cat, log: cfg.Logger, fwd: newForwarder(cfg.Upstreams, cfg.ForwardTimeout, cfg.CacheSize, pc.LocalAddr().String()),
		addr: pc.LocalAddr().String(), done: make(chan struct{})}
	s.udp = &dns.Server{PacketConn: pc, Handler: s, UDPSize: dns.DefaultMsgSize}
	s.tcp = &dns.Server{Listener: ln, Handler: s, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		MaxTCPQueries: 1000}
	var wg sync.WaitGroup
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		wg.Go(func() {
			if err := srv.ActivateAndServe(); err != nil {
				s.log.Warn("dns server stopped", "addr", s.addr, "err", err)
			}
		})
	}
	go func() { wg.Wait(); close(s.done) }()
	return s, nil
}

// listenDNS listens on addr over UDP and TCP, on one port. With port 0 the UDP socket
// picks it, and TCP may find it taken by another program: then another is picked.
func listenDNS(addr string) (net.PacketConn, net.Listener, error) {
	_, port, _ := net.SplitHostPort(addr)
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("dns: listen udp %s: %w", addr, err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if port != "0" || !errors.Is(err, syscall.EADDRINUSE) || attempt == 10 {
			return nil, nil, fmt.Errorf("dns: listen tcp %s: %w", pc.LocalAddr(), err)
		}
	}
}

// Addr is the address the server listens on.
func (s *DNSServer) Addr() string { return s.addr }

// Close stops the server and waits for it.
func (s *DNSServer) Close() error {
	s.stopped.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.udp.ShutdownContext(ctx)
		s.tcp.ShutdownContext(ctx)
	})
	<-s.done
	return nil
}

// ServeDNS answers one query.
func (s *DNSServer) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeNotImplemented)
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name, short, local := s.clusterName(strings.ToLower(q.Name))
	if !local {
		w.WriteMsg(s.fwd.forward(req, isTCP(w)))
		return
	}
	m := s.answer(req, q, name, short)
	fit(m, req, isTCP(w))
	w.WriteMsg(m)
}

// clusterName maps a query name to the cluster name it means, whether the query used
// one of BCS's short forms, and whether it is a cluster name at all: a name under the
// cluster domain, or a short form of a service that exists (SVC.NS, SVC.NS.svc, and the
// SRV and instance names under them). Any other name is someone else's and is
// forwarded.
func (s *DNSServer) clusterName(name string) (full string, short, local bool) {
	z := s.cat.zone
	if name == z.domain || strings.HasSuffix(name, "."+z.domain) {
		return name, false, true
	}
	for _, suffix := range []string{"svc.", ""} {
		if suffix != "" && !strings.HasSuffix(name, "."+suffix) {
			continue
		}
		full := strings.TrimSuffix(name, suffix) + "svc." + z.domain
		if _, ok := z.lookup(serviceOf(full, z.domain)); ok {
			return full, true, true
		}
	}
	return name, false, false
}

// serviceOf returns the service name (SVC.NS.svc.DOMAIN) a name under the domain
// belongs to: its last two labels before "svc.DOMAIN".
func serviceOf(name, domain string) string {
	rest := strings.TrimSuffix(name, "svc."+domain)
	labels := strings.Split(strings.TrimSuffix(rest, "."), ".")
	if len(labels) < 2 {
		return name
	}
	return strings.Join(labels[len(labels)-2:], ".") + ".svc." + domain
}

// answer builds the authoritative answer for a cluster name, asked by one of BCS's short
// forms (short) or not: a service with a VIP answers the short forms with BCS's answer,
// its instances.
func (s *DNSServer) answer(req *dns.Msg, q dns.Question, name string, short bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.RecursionAvailable = true
	rs, ok := s.cat.zone.lookup(name)
	if !ok || !rs.exists {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
		return m
	}
	if short && rs.bcs != nil {
		rs = rs.bcs
	}
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: answerTTL}
	}
	v4s, v6s := rs.v4, rs.v6
	if len(rs.aliases) > 0 && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY) {
		v4s, v6s = s.withAliases(rs, q.Qtype)
	}
	switch q.Qtype {
	case dns.TypeA, dns.TypeANY:
		for _, ip := range v4s {
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr(dns.TypeA), A: ip})
		}
		if q.Qtype == dns.TypeA {
			break
		}
		fallthrough
	case dns.TypeAAAA:
		for _, ip := range v6s {
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: ip})
		}
	case dns.TypeSRV:
		for _, t := range rs.srv {
			m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr(dns.TypeSRV), Priority: 0, Weight: 10, Port: t.port, Target: t.target})
			if v := t.ip.To4(); v != nil {
				m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: t.target, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: answerTTL}, A: v})
			} else {
				m.Extra = append(m.Extra, &dns.AAAA{Hdr: dns.RR_Header{Name: t.target, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: answerTTL}, AAAA: t.ip})
			}
		}
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.soa()} // no data: the name exists, not with that type
	}
	return m
}

// withAliases returns the addresses of rs with those of its alias names merged in: a name
// of the cluster is looked up in the zone, with BCS's answer (the instances, as bcs-dns;
// one level: its own aliases are not followed), any other through the forwarder and its
// cache. An alias that does not resolve adds nothing.
func (s *DNSServer) withAliases(rs *rrset, qtype uint16) (v4s, v6s []net.IP) {
	out := &rrset{v4: slices.Clone(rs.v4), v6: slices.Clone(rs.v6)}
	for _, name := range rs.aliases {
		if local, ok := s.cat.zone.lookup(name); ok {
			if local.bcs != nil {
				local = local.bcs
			}
			for _, ip := range local.v4 {
				out.add(ip)
			}
			for _, ip := range local.v6 {
				out.add(ip)
			}
			continue
		}
		for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
			if qtype != dns.TypeANY && qtype != t {
				continue
			}
			req := new(dns.Msg)
			req.SetQuestion(name, t)
			for _, rr := range s.fwd.forward(req, true).Answer {
				switch r := rr.(type) {
				case *dns.A:
					out.add(r.A)
				case *dns.AAAA:
					out.add(r.AAAA)
				}
			}
		}
	}
	return out.v4, out.v6
}

// soa is the zone's SOA record, for negative answers (its minimum is their TTL).
func (s *DNSServer) soa() dns.RR {
	d := s.cat.zone.domain
	return &dns.SOA{Hdr: dns.RR_Header{Name: d, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: answerTTL},
		Ns: "ns.dns." + d, Mbox: "hostmaster." + d, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: answerTTL}
}

// fqdn lower-cases a domain and gives it its trailing dot.
func fqdn(d string) string { return dns.Fqdn(strings.ToLower(strings.Trim(d, "."))) }

func isTCP(w dns.ResponseWriter) bool {
	_, ok := w.RemoteAddr().(*net.TCPAddr)
	return ok
}

// fit cuts an answer to what the client takes: its UDP size (the client then asks again
// over TCP), and over TCP a DNS message's limit of 64 KiB (a service of thousands of
// instances answers with as many as fit).
func fit(m, req *dns.Msg, overTCP bool) {
	if overTCP {
		m.Truncate(dns.MaxMsgSize)
		return
	}
	m.Truncate(udpSize(req))
}

// udpSize is the largest answer a UDP client takes: its EDNS0 buffer, else 512.
func udpSize(req *dns.Msg) int {
	if o := req.IsEdns0(); o != nil && o.UDPSize() > dns.MinMsgSize {
		return int(o.UDPSize())
	}
	return dns.MinMsgSize
}
