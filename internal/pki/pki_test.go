package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

func newTestCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestCARoundTripAndIssue(t *testing.T) {
	ca := newTestCA(t)
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseCA(ca.CertPEM, keyPEM)
	if err != nil || again.Hash() != ca.Hash() {
		t.Fatalf("ParseCA: %v", err)
	}
	other := newTestCA(t)
	otherKey, _ := other.KeyPEM()
	if _, err := ParseCA(ca.CertPEM, otherKey); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("mismatched key: %v", err)
	}
	if !strings.HasPrefix(ca.Hash(), "sha256:") || CheckPin(ca.Hash()) != nil {
		t.Fatalf("hash %q", ca.Hash())
	}

	kp, err := ca.Issue(Request{CommonName: "n1", Organization: OrgNodes, Client: true, Server: true, Lifetime: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificate(kp.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if node, ok := NodeOf(cert); !ok || node != "n1" || IsServer(cert) {
		t.Fatalf("identity of %v", cert.Subject)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: other.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Fatal("verified under another CA")
	}
	if got := cert.NotAfter.Sub(cert.NotBefore); got != time.Hour+clockSkew {
		t.Fatalf("lifetime %s", got)
	}
	// A certificate never outlives its CA.
	long, err := ca.Sign(Request{CommonName: "x", Lifetime: 100 * 365 * 24 * time.Hour}, ca.Cert.PublicKey, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lc, _ := x509.ParseCertificate(long)
	if lc.NotAfter.After(ca.Cert.NotAfter) {
		t.Fatal("certificate outlives the CA")
	}
}

func TestIdentityNeedsOneOrganization(t *testing.T) {
	ca := newTestCA(t)
	for _, c := range []struct {
		org                string
		node, server, user bool
	}{{OrgNodes, true, false, false}, {OrgServers, false, true, false}, {OrgUsers, false, false, true}, {"", false, false, false}, {"berth:admins", false, false, false}} {
		kp, err := ca.Issue(Request{CommonName: "x", Organization: c.org, Unit: "b", Client: true}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := ParseCertificate(kp.CertPEM)
		_, _, user := UserOf(cert)
		if _, ok := NodeOf(cert); ok != c.node || IsServer(cert) != c.server || user != c.user {
			t.Errorf("org %q: node %v server %v user %v", c.org, ok, IsServer(cert), user)
		}
	}
	if _, _, ok := UserOf(nil); ok {
		t.Error("nil certificate is a user")
	}
	if _, ok := NodeOf(nil); ok || IsServer(nil) {
		t.Error("nil certificate has an identity")
	}
	// A user's certificate names its token's binding, or it is nobody's.
	kp, err := ca.Issue(Request{CommonName: "berth-acl-abc123", Organization: OrgUsers, Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCertificate(kp.CertPEM)
	if _, _, ok := UserOf(cert); ok {
		t.Error("a user's certificate without a binding is a user")
	}
}

// A certificate given a latest end (a user's, bound to a token that expires) ends then.
func TestNotAfterBound(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	der, err := ca.Sign(Request{CommonName: "x", NotAfter: now.Add(time.Hour)}, ca.Cert.PublicKey, now)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	if c.NotAfter.After(now.Add(time.Hour)) {
		t.Fatalf("certificate ends %s, past its bound %s", c.NotAfter, now.Add(time.Hour))
	}
}

func TestCSR(t *testing.T) {
	csrPEM, keyPEM, err := NewCSR("n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCSR(csrPEM); err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePrivateKey(keyPEM); err != nil {
		t.Fatal(err)
	}
	// A CSR whose signature does not match is refused.
	tampered := []byte(strings.Replace(string(csrPEM), string(csrPEM[100:104]), "AAAA", 1))
	for _, bad := range [][]byte{nil, []byte("junk"), tampered, []byte(strings.Repeat("A", maxCSRBytes+1))} {
		if _, err := ParseCSR(bad); err == nil {
			t.Errorf("ParseCSR(%.30q) accepted", bad)
		}
	}
}

// A client pinning the CA's hash reaches a server that sends the CA after its
// certificate, and refuses one of another CA or a certificate for another name.
func TestPinnedConfig(t *testing.T) {
	ca := newTestCA(t)
	other := newTestCA(t)
	serve := func(ca *CA, names ...string) string {
		kp, err := ca.Issue(Request{CommonName: "s", Organization: OrgServers, Server: true, DNSNames: names, IPs: []net.IP{net.ParseIP("127.0.0.1")}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRotating(kp, nil, slog.New(slog.DiscardHandler), ca.Cert)
		if err != nil {
			t.Fatal(err)
		}
		l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: r.GetCertificate})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.(*tls.Conn).Handshake()
				c.Close()
			}
		}()
		return l.Addr().String()
	}
	good, foreign := serve(ca, "localhost"), serve(other, "localhost")
	var seen *x509.Certificate
	dial := func(addr, name string) error {
		conf := PinnedConfig(ca.Hash(), func(c *x509.Certificate) { seen = c })
		conf.ServerName = name
		c, err := tls.Dial("tcp", addr, conf)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(good, "localhost"); err != nil || seen == nil || Hash(seen) != ca.Hash() {
		t.Fatalf("pinned dial: %v", err)
	}
	if err := dial(foreign, "localhost"); err == nil || !strings.Contains(err.Error(), "no CA with hash") {
		t.Fatalf("another CA: %v", err)
	} else if _, ok := errors.AsType[*PinError](err); !ok {
		t.Fatalf("another CA: %T, want *PinError", err)
	}
	if err := dial(good, "elsewhere.example"); err == nil || !strings.Contains(err.Error(), "not valid under the pinned CA") {
		t.Fatalf("wrong name: %v", err)
	}
	if CheckPin("sha256:ABC") == nil || CheckPin("md5:"+strings.Repeat("0", 64)) == nil {
		t.Fatal("bad pins accepted")
	}
}

// runUntilRenewed runs r until the test ends and waits up to within for its first
// renewal; failing says so.
func runUntilRenewed(t *testing.T, r *Rotating, within time.Duration, failing string) {
	t.Helper()
	changed := r.Changed()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-changed:
	case <-time.After(within):
		t.Fatal(failing)
	}
}

// Rotating renews two thirds into the lifetime and serves the new certificate at once.
func TestRotatingRenews(t *testing.T) {
	ca := newTestCA(t)
	issue := func(context.Context) (KeyPair, error) {
		return ca.Issue(Request{CommonName: "r", Client: true, Lifetime: 1500 * time.Millisecond}, time.Now())
	}
	kp, err := issue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRotating(kp, issue, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	first := r.Leaf().SerialNumber
	runUntilRenewed(t, r, 10*time.Second, "not renewed")
	c, _ := r.GetClientCertificate(nil)
	if c.Leaf.SerialNumber.Cmp(first) == 0 || r.Leaf().SerialNumber.Cmp(first) == 0 {
		t.Fatal("the renewed certificate is not served")
	}
}

// A failed renewal is retried, not given up.
func TestRotatingRetries(t *testing.T) {
	ca := newTestCA(t)
	fails := 2
	issue := func(context.Context) (KeyPair, error) {
		if fails > 0 {
			fails--
			return KeyPair{}, errors.New("server down")
		}
		return ca.Issue(Request{CommonName: "r", Client: true, Lifetime: time.Hour}, time.Now())
	}
	kp, err := ca.Issue(Request{CommonName: "r", Client: true, Lifetime: 3 * time.Second}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRotating(kp, issue, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	runUntilRenewed(t, r, 15*time.Second, "not renewed after failures")
	if fails != 0 || r.Leaf().NotAfter.Sub(time.Now()) < 30*time.Minute {
		t.Fatalf("fails left %d, leaf until %s", fails, r.Leaf().NotAfter)
	}
}
