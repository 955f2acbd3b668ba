package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/testutil/loopback"
)

// registryBin is the distribution registry Debian packages (apt-get install
// docker-registry); CI installs it (.ci/run).
const registryBin = "/usr/bin/docker-registry"

// Private registries against the real binary, Docker and a registry on loopback with
// htpasswd auth and TLS from a CA the test makes (docs/docker.md, "Images and
// registries"): an image pulled with an image pull secret runs, with its Pulled event; a
// wrong password fails the pod with the registry's answer; no password shows in what
// berth shows of the app, its instances or its events.
func TestPrivateRegistry(t *testing.T) {
	s, a := startDockerNode(t, "dk-reg", "29350-29399")
	reg := startRegistry(t)
	image := reg.push(t, testImage, "e2e/busybox:1")

	s.applySpec(t, reg.secret("regcred", reg.password)+"\n"+reg.secret("badcred", "wrong-"+reg.password))
	pulling := func(name, secret, image string) string {
		c := fmtSpec(`{"name":"web","image":%q,"imagePullPolicy":"Always","imagePullSecrets":[{"name":%q}],"command":"/bin/sh","args":["-c","exec sleep 100000"]%s}`,
			image, secret, withResources(""))
		return appSpec{name: name, ns: "e2e", containers: []string{c}}.json()
	}
	// fails applies an app that pulls image with secret and waits until its instance
	// failed with the pull's error, which must say want, as its PullFailed event does.
	fails := func(t *testing.T, name, secret, image, want string) {
		s.applySpec(t, pulling(name, secret, image))
		var tg *v4.TaskGroup
		waitUntil(t, 60*time.Second, "the "+name+" instance to fail", func() bool {
			tgs := s.taskGroups("e2e", name)
			if len(tgs) == 1 && tgs[0].Status.Phase == v4.StatusFailed {
				tg = tgs[0]
			}
			return tg != nil
		})
		if !strings.Contains(tg.Status.Message, "pull image "+image+": ") || !strings.Contains(tg.Status.Message, want) {
			t.Errorf("message %q: want the pull and the registry's answer (%s)", tg.Status.Message, want)
		}
		s.eventsSay("task web: pull image "+image+": Error response from daemon: ", "-n", "e2e") // PullFailed
	}
	t.Run("a pull secret pulls the private image", func(t *testing.T) {
		s.applySpec(t, pulling("private", "regcred", image))
		tg := s.running(t, "e2e", "private", 1)[0]
		if got := inspect(t, tg.Status.Tasks[0].Info.ID, "{{.Config.Image}}"); got != image {
			t.Errorf("the container runs %q, want %q", got, image)
		}
		s.eventsSay("pulled image "+image, "-n", "e2e")
	})
	t.Run("a wrong password fails with the registry's answer", func(t *testing.T) {
		fails(t, "denied", "badcred", image, "unauthorized: authentication required")
	})
	t.Run("a missing tag fails with the registry's answer", func(t *testing.T) {
		fails(t, "notag", "regcred", strings.TrimSuffix(image, ":1")+":2", "manifest unknown")
	})
	t.Run("no password in what berth shows", func(t *testing.T) {
		shown := map[string]string{
			"application": s.mustBerth("get", "applications", "-n", "e2e", "-o", "json"),
			"task groups": s.mustBerth("get", "taskgroups", "-n", "e2e", "-o", "json"),
			"events":      s.mustBerth("events", "-n", "e2e"),
			"secret":      s.mustBerth("get", "secret", "regcred", "-n", "e2e", "-o", "json"),
			"agent log":   a.logs.String(),
		}
		for what, out := range shown {
			if strings.Contains(out, reg.password) || strings.Contains(out, reg.auth(reg.password)) {
				t.Errorf("the %s shows the password:\n%s", what, out)
			}
		}
	})
	s.mustBerth("delete", "application", "private", "-n", "e2e")
	s.mustBerth("delete", "application", "denied", "-n", "e2e")
	s.mustBerth("delete", "application", "notag", "-n", "e2e")
	waitNoContainers(t, a.name, 60*time.Second)
}

// registry is a distribution registry on loopback with TLS and one htpasswd user.
type registry struct {
	host           string // 127.0.0.1:<port>
	user, password string
	dockerConfig   string // the docker client's config dir for login and push
}

// startRegistry starts the registry on a free loopback port, with a certificate from a
// CA that dockerd trusts through /etc/docker/certs.d/<host>/ca.crt (read at each pull),
// which the test creates and removes.
func startRegistry(t *testing.T) *registry {
	t.Helper()
	if _, err := os.Stat(registryBin); err != nil {
		if os.Getenv("BERTH_REQUIRE_DOCKER") == "1" {
			t.Fatalf("BERTH_REQUIRE_DOCKER=1 but %s is missing (apt-get install docker-registry): %v", registryBin, err)
		}
		t.Skipf("%s is missing (apt-get install docker-registry): %v", registryBin, err)
	}
	dir := t.TempDir()
	r := &registry{host: fmt.Sprintf("127.0.0.1:%d", loopback.FreePort(t)), user: "e2e", password: "pw-" + rand.Text()[:12],
		dockerConfig: filepath.Join(dir, "docker")}
	caPEM := writeRegistryTLS(t, dir)
	certsDir := filepath.Join("/etc/docker/certs.d", r.host)
	if err := os.MkdirAll(certsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(certsDir)
		os.Remove(filepath.Dir(certsDir)) // when the test created it: only an empty one goes
	})
	if err := os.WriteFile(filepath.Join(certsDir, "ca.crt"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(r.password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: %s}}
http: {addr: %s, tls: {certificate: %s, key: %s}}
auth: {htpasswd: {realm: berth-e2e, path: %s}}
`, filepath.Join(dir, "data"), r.host, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"), filepath.Join(dir, "htpasswd"))
	for name, content := range map[string]string{"htpasswd": r.user + ":" + string(hash) + "\n", "config.yml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, registryBin, "serve", filepath.Join(dir, "config.yml"))
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
	r.waitReady(t, caPEM)
	return r
}

// waitReady waits until the registry answers over TLS (401 without credentials).
func (r *registry) waitReady(t *testing.T, caPEM []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	waitUntil(t, 20*time.Second, "the registry to answer", func() bool {
		resp, err := c.Get("https://" + r.host + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
}

// docker runs the docker client with the registry's own config dir, so that its login
// never touches the host's.
func (r *registry) docker(t *testing.T, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command("docker", append([]string{"--config", r.dockerConfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker %s: %v\n%s", args[0], err, out)
	}
}

// push tags image as the registry's repo, pushes it, logs out and removes the tag, so
// that a pull must really happen; the pulled image is removed when the test ends.
func (r *registry) push(t *testing.T, image, repo string) string {
	t.Helper()
	ref := r.host + "/" + repo
	r.docker(t, "", "tag", image, ref)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", ref).Run() })
	r.docker(t, r.password, "login", r.host, "-u", r.user, "--password-stdin")
	r.docker(t, "", "push", ref)
	r.docker(t, "", "logout", r.host)
	r.docker(t, "", "rmi", ref)
	return ref
}

// auth is a docker config's auth of the user with password.
func (r *registry) auth(password string) string {
	return base64.StdEncoding.EncodeToString([]byte(r.user + ":" + password))
}

// secret is an image pull secret of namespace e2e for the registry.
func (r *registry) secret(name, password string) string {
	config := fmt.Sprintf(`{"auths":{"https://%s":{"auth":%q}}}`, r.host, r.auth(password))
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":%q,"namespace":"e2e"},"type":%q,"datas":{%q:{"content":%q}}}`,
		name, v4.SecretTypeDockerConfigJSON, v4.DockerConfigJSONKey, base64.StdEncoding.EncodeToString([]byte(config)))
}

// writeRegistryTLS writes server.crt and server.key for 127.0.0.1, signed by a CA made
// here, into dir, and returns the CA's PEM.
func writeRegistryTLS(t *testing.T, dir string) []byte {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth e2e registry CA"},
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
