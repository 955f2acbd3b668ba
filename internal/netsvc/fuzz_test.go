package netsvc

import (
	"net"
	"testing"

	"github.com/miekg/dns"
)

// recorder is a dns.ResponseWriter that keeps the answer.
type recorder struct {
	msg    *dns.Msg
	remote net.Addr
}

func (r *recorder) LocalAddr() net.Addr       { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (r *recorder) RemoteAddr() net.Addr      { return r.remote }
func (r *recorder) WriteMsg(m *dns.Msg) error { r.msg = m; return nil }
func (r *recorder) Write(b []byte) (int, error) {
	return len(b), nil
}
func (r *recorder) Close() error        { return nil }
func (r *recorder) TsigStatus() error   { return nil }
func (r *recorder) TsigTimersOnly(bool) {}
func (r *recorder) Hijack()             {}

// FuzzServeDNS sends any packet that decodes as a DNS message to the server's handler:
// it answers every one (no panic) with a message that packs, and never forwards (there
// is no upstream: other names are refused).
func FuzzServeDNS(f *testing.F) {
	cat := NewCatalog("cluster.local")
	cat.Put(webService())
	cat.Put(webEndpoints("172.17.0.2", "fd00::2"))
	s := &DNSServer{cat: cat, fwd: newForwarder(nil, 0, 0, "")}
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"web.demo.svc.cluster.local.", dns.TypeA}, {"web.demo.", dns.TypeANY}, {"_http._tcp.web.demo.svc.", dns.TypeSRV},
		{"0-web.web.demo.svc.cluster.local.", dns.TypeAAAA}, {"example.org.", dns.TypeA}, {".", dns.TypeNS},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.SetEdns0(4096, true)
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req := new(dns.Msg)
		if req.Unpack(b) != nil {
			return // the server drops what does not decode
		}
		for _, remote := range []net.Addr{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}} {
			w := &recorder{remote: remote}
			s.ServeDNS(w, req)
			if w.msg == nil {
				t.Fatalf("no answer to %v", req.Question)
			}
			if _, err := w.msg.Pack(); err != nil {
				t.Fatalf("the answer to %v does not pack: %v", req.Question, err)
			}
		}
	})
}
