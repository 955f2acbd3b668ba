package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/berthhq/berth/internal/pki"
)

// externalEtcdTLS is the client TLS of an external etcd from --etcd-cacert, --etcd-cert
// and --etcd-key; nil without them.
func externalEtcdTLS(cfg EtcdConfig) (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" && cfg.KeyFile == "" {
		return nil, nil
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("--etcd-cacert, --etcd-cert and --etcd-key are for an external etcd (--etcd-endpoints): the embedded one always uses the cluster CA")
	}
	conf := pki.Hardened(&tls.Config{})
	if cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cacert: %w", err)
		}
		certs, err := pki.ParseCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cacert %s: %w", cfg.CAFile, err)
		}
		conf.RootCAs = x509.NewCertPool()
		for _, c := range certs {
			conf.RootCAs.AddCert(c)
		}
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("give both --etcd-cert and --etcd-key")
	}
	if cfg.CertFile != "" {
		c, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert/--etcd-key: %w", err)
		}
		conf.Certificates = []tls.Certificate{c}
	}
	return conf, nil
}
