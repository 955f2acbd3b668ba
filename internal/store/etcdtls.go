package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/pki"
)

// The embedded etcd speaks TLS only (docs/security.md, TLS): its client and peer URLs
// take connections from certificates of the cluster CA alone, so neither a local user nor
// anyone on the network can read or write berth's state behind the API. The CA must exist
// before etcd starts, so an embedded member keeps it in DATA-DIR/tls (the key 0600, as
// kubeadm keeps /etc/kubernetes/pki): the first server creates it, a joining server
// receives it in the join answer, and it is the same CA the cluster keeps in etcd
// (EnsureCA) for the API and the agents.

// Files of DATA-DIR/tls.
const (
	tlsDirName   = "tls"
	caCertFile   = "ca.crt"
	caKeyFile    = "ca.key"
	etcdCertFile = "etcd.crt"
	etcdKeyFile  = "etcd.key"
)

// loadOrCreateCA reads the member's CA from DATA-DIR/tls, or keeps the one of the join
// answer, or creates the cluster's first.
func loadOrCreateCA(dataDir string, joined *cluster.Joined, log *slog.Logger) (*pki.CA, error) {
	dir := filepath.Join(dataDir, tlsDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate dir: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if joined != nil && len(joined.CACert) > 0 {
		ca, err := pki.ParseCA([]byte(joined.CACert), []byte(joined.CAKey))
		if err != nil {
			return nil, fmt.Errorf("the CA of the join answer: %w", err)
		}
		return ca, writeCA(ca, certPath, keyPath)
	}
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	switch {
	case cerr == nil && kerr == nil:
		ca, err := pki.ParseCA(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		return ca, nil
	case !errors.Is(cerr, fs.ErrNotExist) || !errors.Is(kerr, fs.ErrNotExist):
		return nil, fmt.Errorf("the CA in %s is incomplete or unreadable: %v", dir, errors.Join(cerr, kerr))
	}
	ca, err := pki.NewCA("berth cluster CA", time.Now())
	if err != nil {
		return nil, err
	}
	log.Info("cluster CA created", "dir", dir, "caHash", ca.Hash())
	return ca, writeCA(ca, certPath, keyPath)
}

func writeCA(ca *pki.CA, certPath, keyPath string) error {
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("keep the CA key: %w", err)
	}
	if err := atomicfile.Write(certPath, ca.CertPEM, 0o644); err != nil {
		return fmt.Errorf("keep the CA certificate: %w", err)
	}
	return nil
}

// etcdTLS is the TLS of the embedded member and of the store's client: a serving and
// peer certificate for the member's hosts, kept in files etcd reads at each handshake,
// and a client certificate; both are renewed before they expire.
type etcdTLS struct {
	ca     *pki.CA
	dir    string
	member *pki.Rotating
	client *pki.Rotating
}

// The names of the etcd certificates: the embedded member takes no other client, so
// that no other certificate of the cluster CA (a node's, a user's) reaches etcd.
const (
	etcdMemberCN = "berth etcd member"
	etcdClientCN = "berth etcd client"
)

// newEtcdTLS issues the member's certificates for the hosts of its URLs (and loopback).
func newEtcdTLS(dataDir string, ca *pki.CA, urls []url.URL, log *slog.Logger) (*etcdTLS, error) {
	t := &etcdTLS{ca: ca, dir: filepath.Join(dataDir, tlsDirName)}
	var req pki.Request
	req.CommonName, req.Organization, req.Server, req.Client = etcdMemberCN, pki.OrgServers, true, true
	seen := map[string]bool{}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, hostsOf(urls)...) {
		if seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			req.IPs = append(req.IPs, ip)
		} else {
			req.DNSNames = append(req.DNSNames, h)
		}
	}
	issueMember := func(context.Context) (pki.KeyPair, error) {
		kp, err := ca.Issue(req, time.Now())
		if err != nil {
			return kp, err
		}
		if err := atomicfile.Write(filepath.Join(t.dir, etcdKeyFile), kp.KeyPEM, 0o600); err != nil {
			return kp, err
		}
		return kp, atomicfile.Write(filepath.Join(t.dir, etcdCertFile), kp.CertPEM, 0o644)
	}
	kp, err := issueMember(context.Background())
	if err != nil {
		return nil, fmt.Errorf("issue the etcd member's certificate: %w", err)
	}
	if t.member, err = pki.NewRotating(kp, issueMember, log); err != nil {
		return nil, err
	}
	clientReq := pki.Request{CommonName: etcdClientCN, Organization: pki.OrgServers, Client: true}
	issueClient := func(context.Context) (pki.KeyPair, error) { return ca.Issue(clientReq, time.Now()) }
	if kp, err = issueClient(context.Background()); err != nil {
		return nil, fmt.Errorf("issue the etcd client certificate: %w", err)
	}
	if t.client, err = pki.NewRotating(kp, issueClient, log); err != nil {
		return nil, err
	}
	return t, nil
}

func hostsOf(urls []url.URL) []string {
	var out []string
	for _, u := range urls {
		if h := u.Hostname(); h != "" && h != "0.0.0.0" && h != "::" {
			out = append(out, h)
		}
	}
	return out
}

// apply makes the member serve its client and peer URLs over TLS with client
// certificates of the CA required on both, and of etcd's own names only.
func (t *etcdTLS) apply(cfg *embed.Config) {
	cert, key, ca := filepath.Join(t.dir, etcdCertFile), filepath.Join(t.dir, etcdKeyFile), filepath.Join(t.dir, caCertFile)
	for _, info := range []*transport.TLSInfo{&cfg.ClientTLSInfo, &cfg.PeerTLSInfo} {
		info.CertFile, info.KeyFile, info.TrustedCAFile, info.ClientCertAuth = cert, key, ca, true
		// The CA also issues nodes' and users' client certificates: etcd takes only
		// its members' and the servers' store clients' (node names have no spaces).
		info.AllowedCNs = []string{etcdMemberCN, etcdClientCN}
		info.CipherSuites = pki.CipherSuites() // AEAD only at TLS 1.2, as the API (pki.Hardened)
	}
}

// clientConfig is the store client's TLS config.
func (t *etcdTLS) clientConfig() *tls.Config {
	return pki.Hardened(&tls.Config{RootCAs: t.ca.Pool(), GetClientCertificate: t.client.GetClientCertificate})
}

// run renews both certificates until ctx ends.
func (t *etcdTLS) run(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); t.client.Run(ctx) }()
	t.member.Run(ctx)
	<-done
}

// LocalCA is the embedded member's CA (nil with an external etcd): the cluster's, which
// EnsureCA keeps in etcd for every server.
func (s *Store) LocalCA() *pki.CA {
	if s.tls == nil {
		return nil
	}
	return s.tls.ca
}

// ClientTLS is the TLS config of a client of the embedded member (nil with an external
// etcd): another store of the same server process may connect with it.
func (s *Store) ClientTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.clientConfig()
}

// JoinCA is what a join answer carries of the CA: its certificate and key in PEM (nil
// with an external etcd, whose servers read the CA from etcd).
func (s *Store) JoinCA() (certPEM, keyPEM []byte, err error) {
	if s.tls == nil {
		return nil, nil, nil
	}
	keyPEM, err = s.tls.ca.KeyPEM()
	return s.tls.ca.CertPEM, keyPEM, err
}
