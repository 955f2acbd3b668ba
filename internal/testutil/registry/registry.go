// Package registry runs a private image registry for tests: Debian's distribution
// registry (/usr/bin/docker-registry) on a free loopback port, with htpasswd auth for
// one user and TLS from a CA the test makes. The Docker driver's e2e test and the
// containerd driver's tests pull from it. Only tests import it.
package registry

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/berthhq/berth/internal/testutil/loopback"
)

// Bin is the distribution registry Debian packages (apt-get install docker-registry).
const Bin = "/usr/bin/docker-registry"

// Registry is a running registry.
type Registry struct {
	Host           string // 127.0.0.1:<port>
	User, Password string
	// CA is the PEM of the CA that signed the registry's certificate.
	CA []byte
}

// Missing says why no registry can run here ("" when it can).
func Missing() string {
	if _, err := os.Stat(Bin); err != nil {
		return fmt.Sprintf("%s is missing (apt-get install docker-registry): %v", Bin, err)
	}
	return ""
}

// Start starts a registry that lives until the test ends (its log is shown when the
// test failed). The caller checks Missing first.
func Start(t *testing.T) *Registry {
	t.Helper()
	dir := t.TempDir()
	r := &Registry{Host: fmt.Sprintf("127.0.0.1:%d", loopback.FreePort(t)), User: "e2e", Password: "pw-" + rand.Text()[:12]}
	r.CA = writeTLS(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: %s}}
http: {addr: %s, tls: {certificate: %s, key: %s}}
auth: {htpasswd: {realm: berth-e2e, path: %s}}
`, filepath.Join(dir, "data"), r.Host, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"), filepath.Join(dir, "htpasswd"))
	for name, content := range map[string]string{"htpasswd": r.User + ":" + string(hash) + "\n", "config.yml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, Bin, "serve", filepath.Join(dir, "config.yml"))
	logs, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("registry log:\n%s", b)
		}
	})
	r.waitReady(t)
	return r
}

// TrustIn writes the registry's CA as dir/<host>/ca.crt, the hosts-directory layout
// dockerd (/etc/docker/certs.d) and containerd (/etc/containerd/certs.d) read, and
// removes it when the test ends (dir too, when it is empty then).
func (r *Registry) TrustIn(t *testing.T, dir string) {
	t.Helper()
	certsDir := filepath.Join(dir, r.Host)
	if err := os.MkdirAll(certsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(certsDir)
		os.Remove(dir) // when the test created it: only an empty one goes
	})
	if err := os.WriteFile(filepath.Join(certsDir, "ca.crt"), r.CA, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the registry answers over TLS (401 without credentials).
func (r *Registry) waitReady(t *testing.T) {
	t.Helper()
	c := r.client()
	c.Timeout = 2 * time.Second
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.Get("https://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry on %s did not answer within 20s: %v", r.Host, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeTLS writes server.crt and server.key for 127.0.0.1, signed by a CA made here,
// into dir, and returns the CA's PEM.
func writeTLS(t *testing.T, dir string) []byte {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth test registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"server.crt": {Type: "CERTIFICATE", Bytes: der},
		"server.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// PushLayer stores an image of one uncompressed layer (a tar) as repo:tag straight
// through the registry's HTTP API, so that no container runtime holds its content, and
// returns the image's name. Its config says linux/amd64 with no command.
func (r *Registry) PushLayer(t *testing.T, repo, tag string, layer []byte) string {
	t.Helper()
	layerDigest := digestOf(layer)
	config := fmt.Appendf(nil, `{"architecture":"amd64","os":"linux","config":{},"rootfs":{"type":"layers","diff_ids":[%q]}}`, layerDigest)
	manifest := fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`,
		digestOf(config), len(config), layerDigest, len(layer))
	c := r.client()
	for _, blob := range [][]byte{layer, config} {
		resp := r.do(t, c, http.MethodPost, "https://"+r.Host+"/v2/"+repo+"/blobs/uploads/", "", nil, http.StatusAccepted)
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("blob upload of %s: %v", repo, err)
		}
		q := loc.Query()
		q.Set("digest", digestOf(blob))
		loc.RawQuery = q.Encode()
		r.do(t, c, http.MethodPut, loc.String(), "application/octet-stream", blob, http.StatusCreated)
	}
	r.do(t, c, http.MethodPut, "https://"+r.Host+"/v2/"+repo+"/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json", manifest, http.StatusCreated)
	return r.Host + "/" + repo + ":" + tag
}

// client is an HTTPS client that trusts the registry's CA.
func (r *Registry) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(r.CA)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// do sends one request with the registry's user and requires the status want.
func (r *Registry) do(t *testing.T, c *http.Client, method, url, contentType string, body []byte, want int) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(r.User, r.Password)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d: %s", method, url, resp.Status, want, msg)
	}
	return resp
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
