package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/ctxtime"
)

// Rotating holds a certificate that is renewed before it expires, without a restart:
// TLS configs read it through GetCertificate and GetClientCertificate at each handshake,
// and Run replaces it once two thirds of its lifetime have passed.
type Rotating struct {
	renew func(ctx context.Context) (KeyPair, error)
	log   *slog.Logger
	// extra is appended to the certificate's chain (a server sends the CA after its own
	// certificate, so a newcomer can pin it).
	extra [][]byte

	mu      sync.RWMutex
	cert    *tls.Certificate
	changed chan struct{} // closed and replaced at each renewal
}

// NewRotating holds kp and renews it with renew. chain is sent after the certificate.
func NewRotating(kp KeyPair, renew func(context.Context) (KeyPair, error), log *slog.Logger, chain ...*x509.Certificate) (*Rotating, error) {
	r := &Rotating{renew: renew, log: log, changed: make(chan struct{})}
	for _, c := range chain {
		r.extra = append(r.extra, c.Raw)
	}
	if err := r.set(kp); err != nil {
		return nil, err
	}
	return r, nil
}

// set parses kp and makes it current.
func (r *Rotating) set(kp KeyPair) error {
	c, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return fmt.Errorf("certificate and key: %w", err)
	}
	c.Certificate = append(c.Certificate, r.extra...)
	r.mu.Lock()
	r.cert = &c
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return nil
}

// Leaf is the current certificate.
func (r *Rotating) Leaf() *x509.Certificate {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cert.Leaf
}

// Changed is closed at the next renewal.
func (r *Rotating) Changed() <-chan struct{} {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.changed
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (r *Rotating) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cert, nil
}

// GetClientCertificate presents the current certificate (tls.Config.GetClientCertificate).
func (r *Rotating) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.GetCertificate(nil)
}

// RenewAt is when a certificate is renewed: two thirds into its lifetime.
func RenewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// Run renews the certificate at RenewAt until ctx ends. A failed renewal is retried with
// a growing wait, up to a tenth of the time left, so an expiring certificate keeps trying.
func (r *Rotating) Run(ctx context.Context) {
	retry := time.Duration(0)
	for {
		wait := time.Until(RenewAt(r.Leaf()))
		if retry > 0 {
			wait = retry
		}
		if ctxtime.Sleep(ctx, wait) != nil {
			return
		}
		kp, err := r.renew(ctx)
		if err == nil {
			err = r.set(kp)
		}
		if err == nil {
			retry = 0
			r.log.Info("certificate renewed", "subject", r.Leaf().Subject.String(), "notAfter", r.Leaf().NotAfter)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		left := time.Until(r.Leaf().NotAfter)
		retry = min(max(2*retry, time.Second), max(left/10, time.Second), 5*time.Minute)
		r.log.Warn("certificate renewal failed; retrying", "err", err, "retryIn", retry, "expiresIn", left.Round(time.Second))
	}
}
