package daemon

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/pki"
)

// The server's client of an external etcd offers the API's suites, and its flags are
// checked before anything is opened.
func TestExternalEtcdTLS(t *testing.T) {
	ca, err := pki.NewCA("berth test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := externalEtcdTLS(EtcdConfig{Endpoints: []string{"https://etcd.test:2379"}, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(conf.CipherSuites, pki.CipherSuites()) || conf.MinVersion != tls.VersionTLS12 {
		t.Fatalf("external etcd client: TLS %x, suites %v", conf.MinVersion, conf.CipherSuites)
	}
	if conf, err := externalEtcdTLS(EtcdConfig{}); conf != nil || err != nil {
		t.Fatalf("no flags: %v, %v; want no TLS config", conf, err)
	}
	for _, tc := range []struct {
		cfg  EtcdConfig
		want string
	}{
		{EtcdConfig{CAFile: caFile}, "for an external etcd"},
		{EtcdConfig{Endpoints: []string{"https://etcd.test:2379"}, CertFile: caFile}, "give both --etcd-cert and --etcd-key"},
		{EtcdConfig{Endpoints: []string{"https://etcd.test:2379"}, CAFile: filepath.Join(t.TempDir(), "none")}, "--etcd-cacert"},
	} {
		if _, err := externalEtcdTLS(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}
