package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
)

// The node's identity (docs/agent.md, Authentication): a client and serving certificate
// from the cluster CA naming the node, kept in DATA-DIR/tls. The first start exchanges the
// join token for it, trusting the server through the CA hash the token carries (or
// --ca-cert); later starts need no token. The certificate is renewed over mTLS two thirds
// into its lifetime, and every connection, to the servers and from them, uses it.

const (
	tlsDirName   = "tls"
	nodeCertFile = "node.crt"
	nodeKeyFile  = "node.key"
	caCertFile   = "ca.crt"
)

// identity is the node's certificate, renewed by itself, and the CA it chains to.
type identity struct {
	dir  string
	cert *pki.Rotating
	ca   *x509.Certificate
	// serverRoots verify the servers: the cluster CA, or the operator's --ca-cert.
	serverRoots *x509.CertPool
}

// loadIdentity reads the node's certificate from the data dir, or joins with the token
// when there is none (or it expired). It retries unreachable servers until ctx ends; a
// refused token is an error.
func (a *Agent) loadIdentity(ctx context.Context) (*identity, error) {
	dir := filepath.Join(a.cfg.DataDir, tlsDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: certificate dir: %w", err)
	}
	var operatorRoots *x509.CertPool
	if a.cfg.CACertFile != "" {
		p, err := client.LoadCAFile(a.cfg.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("agent: --ca-cert: %w", err)
		}
		operatorRoots = p
	}
	kp, ca, err := a.readIdentity(dir)
	if err != nil {
		if a.cfg.Token == "" {
			return nil, fmt.Errorf("agent: %w; give a join token (--token) to get a certificate", err)
		}
		a.log.Info("joining the cluster with the join token", "reason", err.Error())
		if kp, ca, err = a.join(ctx, dir, operatorRoots); err != nil {
			return nil, err
		}
	}
	id := &identity{dir: dir, ca: ca, serverRoots: operatorRoots}
	if id.serverRoots == nil {
		id.serverRoots = x509.NewCertPool()
		id.serverRoots.AddCert(ca)
	}
	id.cert, err = pki.NewRotating(kp, a.renewCertificate, a.log)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return id, nil
}

// readIdentity loads the certificate, key and CA kept in dir; an error says why they
// cannot be used.
func (a *Agent) readIdentity(dir string) (pki.KeyPair, *x509.Certificate, error) {
	var kp pki.KeyPair
	var err error
	if kp.CertPEM, err = os.ReadFile(filepath.Join(dir, nodeCertFile)); err != nil {
		return kp, nil, fmt.Errorf("no node certificate in %s", dir)
	}
	if kp.KeyPEM, err = os.ReadFile(filepath.Join(dir, nodeKeyFile)); err != nil {
		return kp, nil, fmt.Errorf("no node key in %s", dir)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return kp, nil, fmt.Errorf("no CA certificate in %s", dir)
	}
	ca, err := pki.ParseCertificate(caPEM)
	if err != nil {
		return kp, nil, fmt.Errorf("%s: %w", caCertFile, err)
	}
	cert, err := a.checkNodeCert(kp.CertPEM, ca)
	if err != nil {
		return kp, nil, err
	}
	if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
		return kp, nil, fmt.Errorf("node certificate and key: %w", err)
	}
	if tok, err := jointoken.Parse(a.cfg.Token); err == nil && tok.CAHash != "" && tok.CAHash != pki.Hash(ca) {
		return kp, nil, fmt.Errorf("the data dir's certificate is from the cluster with CA %s, the join token is for CA %s", pki.Hash(ca), tok.CAHash)
	}
	if time.Now().After(cert.NotAfter) {
		return kp, nil, fmt.Errorf("the node certificate expired at %s", cert.NotAfter.Format(time.RFC3339))
	}
	return kp, ca, nil
}

// checkNodeCert verifies that certPEM is this node's certificate from ca. A data dir whose
// certificate names another node is not used: the agent joins again, with a token, under
// its own name.
func (a *Agent) checkNodeCert(certPEM []byte, ca *x509.Certificate) (*x509.Certificate, error) {
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime: cert.NotBefore.Add(time.Second)}); err != nil {
		return nil, fmt.Errorf("node certificate: not from the cluster CA: %w", err)
	}
	if node, ok := pki.NodeOf(cert); !ok || node != a.cfg.NodeName {
		return nil, fmt.Errorf("node certificate: it is for node %q, this agent is node %q", cert.Subject.CommonName, a.cfg.NodeName)
	}
	return cert, nil
}

// join exchanges the join token for the node's certificate, trying the servers in turn
// until one answers.
func (a *Agent) join(ctx context.Context, dir string, operatorRoots *x509.CertPool) (pki.KeyPair, *x509.Certificate, error) {
	tok, err := jointoken.Parse(a.cfg.Token)
	if err != nil {
		return pki.KeyPair{}, nil, fmt.Errorf("agent: %w", err)
	}
	var conf *tls.Config
	switch {
	case operatorRoots != nil:
		conf = pki.Hardened(&tls.Config{RootCAs: operatorRoots})
	case tok.CAHash != "":
		conf = pki.PinnedConfig(tok.CAHash, nil)
	default:
		return pki.KeyPair{}, nil, errors.New("agent: the join token carries no CA hash (berth-<id>.<secret>::sha256:<hex>, as `berth token create` prints it) and no --ca-cert was given: the agent cannot tell the cluster's servers from an impostor")
	}
	csr, keyPEM, err := pki.NewCSR(a.cfg.NodeName)
	if err != nil {
		return pki.KeyPair{}, nil, fmt.Errorf("agent: %w", err)
	}
	hc := client.HTTPClientTLS(conf)
	// The join's connection is of no more use once the node has its certificate: left
	// idle, it would hold one of the server's connections for minutes (a fourth per
	// agent, 5,000 at 5,000 nodes).
	defer hc.CloseIdleConnections()
	joiners, err := newServers(a.cfg.ServerURLs, hc, tok.String(), agentMaxConns, a.log)
	if err != nil {
		return pki.KeyPair{}, nil, err
	}
	bo := ctxtime.NewBackoff(500*time.Millisecond, 15*time.Second)
	for {
		var got *client.Client
		var ans *v4.AgentCertificate
		err := joiners.do(ctx, func(c *client.Client) error {
			r, err := c.AgentCertificate(ctx, a.cfg.NodeName, csr)
			got, ans = c, (*v4.AgentCertificate)(r)
			return err
		})
		if err == nil {
			kp, ca, err := a.acceptCertificate(dir, ans, keyPEM, tok.CAHash)
			if err == nil {
				a.log.Info("joined the cluster: node certificate received", "server", got.Server(), "caHash", pki.Hash(ca))
			}
			return kp, ca, err
		}
		if _, untrusted := errors.AsType[*client.UntrustedError](err); untrusted {
			return pki.KeyPair{}, nil, fmt.Errorf("agent: %w", err)
		}
		if st := client.StatusOf(err); st == http.StatusBadRequest || st == http.StatusUnauthorized || st == http.StatusForbidden {
			return pki.KeyPair{}, nil, fmt.Errorf("agent: the server refused to join node %s: %w", a.cfg.NodeName, err)
		}
		d := bo.Next()
		a.log.Warn("cannot join yet; will retry", "in", d.Round(time.Millisecond), "err", err)
		if !sleep(ctx, d) {
			return pki.KeyPair{}, nil, fmt.Errorf("agent: join: %w", ctx.Err())
		}
	}
}

// renewCertificate gets a new certificate for a new key over mTLS with the current one.
func (a *Agent) renewCertificate(ctx context.Context) (pki.KeyPair, error) {
	csr, keyPEM, err := pki.NewCSR(a.cfg.NodeName)
	if err != nil {
		return pki.KeyPair{}, err
	}
	var ans *v4.AgentCertificate
	err = a.servers.do(ctx, func(c *client.Client) error {
		r, err := c.AgentRenewCertificate(ctx, csr)
		ans = (*v4.AgentCertificate)(r)
		return err
	})
	if err != nil {
		return pki.KeyPair{}, fmt.Errorf("renew the node certificate: %w", err)
	}
	kp, _, err := a.acceptCertificate(a.id.dir, ans, keyPEM, pki.Hash(a.id.ca))
	return kp, err
}

// acceptCertificate checks an answered certificate (this node's, from the expected CA)
// and keeps it in dir with its key.
func (a *Agent) acceptCertificate(dir string, ans *v4.AgentCertificate, keyPEM []byte, wantCA string) (pki.KeyPair, *x509.Certificate, error) {
	ca, err := pki.ParseCertificate([]byte(ans.CA))
	if err != nil {
		return pki.KeyPair{}, nil, fmt.Errorf("the server's answer: CA: %w", err)
	}
	if wantCA != "" && pki.Hash(ca) != wantCA {
		return pki.KeyPair{}, nil, fmt.Errorf("the server answered a CA with hash %s, not %s", pki.Hash(ca), wantCA)
	}
	if _, err := a.checkNodeCert([]byte(ans.Certificate), ca); err != nil {
		return pki.KeyPair{}, nil, fmt.Errorf("the server's answer: %w", err)
	}
	kp := pki.KeyPair{CertPEM: []byte(ans.Certificate), KeyPEM: keyPEM}
	// The key first: a crash between the two leaves a key without its certificate, which
	// the next start refuses and replaces by joining again.
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{nodeKeyFile, kp.KeyPEM, 0o600}, {nodeCertFile, kp.CertPEM, 0o644}, {caCertFile, []byte(ans.CA), 0o644}} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return pki.KeyPair{}, nil, fmt.Errorf("keep the node certificate: %w", err)
		}
	}
	return kp, ca, nil
}

// clientTLS is the TLS config of calls to the servers: the node's certificate, and the
// servers verified against the cluster CA (or --ca-cert).
func (id *identity) clientTLS() *tls.Config {
	return pki.Hardened(&tls.Config{RootCAs: id.serverRoots, GetClientCertificate: id.cert.GetClientCertificate})
}

// serverTLS is the TLS config of the agent's endpoint: the node's certificate, and only
// clients with a certificate of the cluster CA (the handler then requires a server's).
func (id *identity) serverTLS() *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(id.ca)
	return pki.Hardened(&tls.Config{GetCertificate: id.cert.GetCertificate,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots, NextProtos: []string{"http/1.1"}})
}
