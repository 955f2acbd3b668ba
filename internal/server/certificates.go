package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
)

// Certificate signing requests (docs/policy.md, "Admission webhooks"): a webhook's
// serving certificate issued by the cluster CA, so that the hook needs no caBundle.
// Whoever may write certificaterequest (a cluster kind, granted by name only) sends a
// CSR and the names; an administrator (admin on cluster) approves or denies it. The
// certificate serves TLS only (no client use: it opens no agent's API), carries the
// organization berth:webhooks (never a node's, a server's or a user's), and never
// names this server's own names, so it cannot stand in for the API.

// orgWebhooks is the organization of the certificates signed here.
const orgWebhooks = "berth:webhooks"

// Bounds of a request.
const (
	maxCertNames   = 16
	maxWebhookCert = 365 * 24 * time.Hour
)

var certRequestName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

func (s *Server) certificateRoutes(mux *httpapi.Mux) {
	const kind = acl.KindCertificateRequest
	mux.Handle("POST /v1/certificaterequests", on(acl.VerbWrite, kind), s.handleCertRequestCreate)
	mux.Handle("GET /v1/certificaterequests", on(acl.VerbRead, kind), s.handleCertRequestList)
	mux.Handle("GET /v1/certificaterequests/{name}", on(acl.VerbRead, kind), s.handleCertRequestGet)
	mux.Handle("POST /v1/certificaterequests/{name}/approve", adminCluster, s.handleCertRequestDecide(true))
	mux.Handle("POST /v1/certificaterequests/{name}/deny", adminCluster, s.handleCertRequestDecide(false))
	mux.Handle("DELETE /v1/certificaterequests/{name}", adminCluster, s.handleCertRequestDelete)
}

func (s *Server) handleCertRequestCreate(w http.ResponseWriter, r *http.Request) error {
	var req v4.CertificateRequest
	if err := s.bodyReader.Decode(w, r, &req); err != nil {
		return err
	}
	_, err := s.checkCertRequest(&req)
	if err != nil {
		return err
	}
	if req.Name == "" {
		var b [4]byte
		rand.Read(b[:])
		req.Name = "csr-" + hex.EncodeToString(b[:])
	}
	id := identityOf(r)
	req.Requester = cmpOr(id.Name, id.TokenID)
	req.Created, req.Status = time.Now().UTC().Truncate(time.Second), v4.CertPending
	req.Approver, req.Message, req.Certificate, req.CA, req.Expires = "", "", "", "", time.Time{}

	val, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, _, err := s.store.PutCertificateRequest(ctx, req.Name, val, -1); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, req)
	return nil
}

// checkCertRequest validates a request, naming the field: its name, CSR, names (the
// CSR's when left out) and TTL.
func (s *Server) checkCertRequest(req *v4.CertificateRequest) (*x509.CertificateRequest, error) {
	bad := func(field, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		return httpapi.Errorf(http.StatusUnprocessableEntity, "invalid certificate request: %s: %s", field, msg).WithDetail(field, msg)
	}
	if req.Name != "" && !certRequestName.MatchString(req.Name) {
		return nil, bad("name", "lowercase letters, digits, '-' and '.', at most 63, got %q", truncateText(req.Name, 80))
	}
	csr, err := pki.ParseCSR([]byte(req.CSR))
	if err != nil {
		return nil, bad("csr", "%v", err)
	}
	if len(req.DNSNames) == 0 && len(req.IPs) == 0 {
		req.DNSNames = csr.DNSNames
		for _, ip := range csr.IPAddresses {
			req.IPs = append(req.IPs, ip.String())
		}
	}
	if n := len(req.DNSNames) + len(req.IPs); n == 0 || n > maxCertNames {
		return nil, bad("dnsNames", "1 to %d names (dnsNames and ips) for the certificate to serve, got %d", maxCertNames, n)
	}
	own := s.ownNames()
	for i, n := range req.DNSNames {
		field := fmt.Sprintf("dnsNames[%d]", i)
		if len(n) > 253 || !v4DNSName(n) {
			return nil, bad(field, "not a DNS name (no wildcards): %q", truncateText(n, 80))
		}
		if slices.Contains(own, strings.ToLower(n)) {
			return nil, bad(field, "%s is a name of berth's own API: a webhook's certificate must not be able to stand in for it", n)
		}
	}
	for i, n := range req.IPs {
		field := fmt.Sprintf("ips[%d]", i)
		ip := net.ParseIP(n)
		if ip == nil || ip.IsUnspecified() {
			return nil, bad(field, "not an IP address: %q", truncateText(n, 80))
		}
		if slices.Contains(own, ip.String()) {
			return nil, bad(field, "%s is an address of berth's own API: a webhook's certificate must not be able to stand in for it", n)
		}
	}
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > maxWebhookCert {
			return nil, bad("ttl", "a duration such as 720h, up to %s, got %q", maxWebhookCert, truncateText(req.TTL, 40))
		}
	}
	return csr, nil
}

var dnsName = regexp.MustCompile(`^(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?))*$`)

func v4DNSName(s string) bool { return dnsName.MatchString(s) && net.ParseIP(s) == nil }

// ownNames are the names and addresses the API's certificate is for.
func (s *Server) ownNames() []string {
	o := s.webhooks.own
	o.mu.Lock()
	defer o.mu.Unlock()
	out := []string{"localhost", "127.0.0.1", "::1"}
	for _, n := range o.names {
		out = append(out, strings.ToLower(n))
	}
	if h, err := os.Hostname(); err == nil {
		out = append(out, strings.ToLower(h))
	}
	if leaf := s.servingLeaf(); leaf != nil {
		for _, n := range leaf.DNSNames {
			out = append(out, strings.ToLower(n))
		}
		for _, ip := range leaf.IPAddresses {
			out = append(out, ip.String())
		}
	}
	return out
}

// servingLeaf is the API's certificate: the cluster CA's or the operator's files.
func (s *Server) servingLeaf() *x509.Certificate {
	c, err := s.serving.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || c == nil || len(c.Certificate) == 0 {
		return nil
	}
	if c.Leaf != nil {
		return c.Leaf
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

func (s *Server) handleCertRequestList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	docs, err := s.store.CertificateRequests(ctx)
	if err != nil {
		return err
	}
	out := v4.CertificateRequestList{Items: make([]v4.CertificateRequest, 0, len(docs))}
	for _, d := range docs {
		var c v4.CertificateRequest
		if err := json.Unmarshal(d.Value, &c); err != nil {
			return fmt.Errorf("certificate request %s: %w", d.Name, err)
		}
		out.Items = append(out.Items, c)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) loadCertRequest(ctx context.Context, name string) (*v4.CertificateRequest, int64, error) {
	d, err := s.store.CertificateRequest(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	var c v4.CertificateRequest
	if err := json.Unmarshal(d.Value, &c); err != nil {
		return nil, 0, fmt.Errorf("certificate request %s: %w", name, err)
	}
	return &c, d.Rev, nil
}

func (s *Server) handleCertRequestGet(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	c, _, err := s.loadCertRequest(ctx, r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, c)
	return nil
}

// handleCertRequestDecide approves (signs) or denies a pending request.
func (s *Server) handleCertRequestDecide(approve bool) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := httpapi.RequestContext(r)
		defer cancel()
		name := r.PathValue("name")
		c, rev, err := s.loadCertRequest(ctx, name)
		if err != nil {
			return err
		}
		if c.Status != v4.CertPending {
			return httpapi.Errorf(http.StatusConflict, "certificate request %s is %s already", name, c.Status)
		}
		id := identityOf(r)
		c.Approver = cmpOr(id.Name, id.TokenID)
		c.Status = v4.CertDenied
		if approve {
			if err := s.signCertRequest(c); err != nil {
				return err
			}
		}
		val, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if _, _, err := s.store.PutCertificateRequest(ctx, name, val, rev); err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, c)
		return nil
	}
}

// signCertRequest checks the request again (the server's names may have changed) and
// signs it.
func (s *Server) signCertRequest(c *v4.CertificateRequest) error {
	csr, err := s.checkCertRequest(c)
	if err != nil {
		return err
	}
	life := cmp0(s.certLifetime, pki.CertLifetime)
	if c.TTL != "" {
		life, _ = time.ParseDuration(c.TTL)
	}
	req := pki.Request{CommonName: truncateText(csr.Subject.CommonName, 64), Organization: orgWebhooks, DNSNames: c.DNSNames,
		Server: true, Lifetime: life}
	if req.CommonName == "" {
		req.CommonName = c.Name
	}
	for _, ip := range c.IPs {
		req.IPs = append(req.IPs, net.ParseIP(ip))
	}
	der, err := s.ca.Sign(req, csr.PublicKey, time.Now())
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	c.Status, c.Certificate, c.CA, c.Expires = v4.CertApproved, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(s.ca.CertPEM), cert.NotAfter
	return nil
}

func cmp0(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}

func (s *Server) handleCertRequestDelete(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, err := s.store.DeleteCertificateRequest(ctx, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
