package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/driver/drivertest"
	testregistry "github.com/berthhq/berth/internal/testutil/registry"
)

// Private registries against the real binary and a registry on loopback with htpasswd
// auth and TLS from a CA the test makes, one registry for both container runtimes
// (docs/docker.md, "Images and registries"; docs/runtimes.md, "Pulls"): an image pulled
// with an image pull secret runs, with its Pulled event; a wrong password and a missing
// tag fail the pod with the registry's answer; no password shows in what berth shows
// of the app, its instances, its events or in the agent's log. Docker trusts the CA
// through /etc/docker/certs.d, containerd through the agent's --containerd-certs-dir.
func TestPrivateRegistry(t *testing.T) {
	reg := startRegistry(t)
	t.Run("docker", func(t *testing.T) {
		s, a := startDockerNode(t, "dk-reg", "29350-29399")
		reg.TrustIn(t, "/etc/docker/certs.d")
		image := reg.push(t, testImage, "e2e/busybox:1")
		privateRegistryCases(t, s, a, reg, image, "", "Error response from daemon: ", "unauthorized: authentication required")
		waitNoContainers(t, a.name, 60*time.Second)
	})
	t.Run("containerd", func(t *testing.T) {
		requireRoot(t)
		if why := drivertest.ContainerdMissing(); why != "" {
			if os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
				t.Fatal("BERTH_REQUIRE_CONTAINERD=1 but:", why)
			}
			t.Skip(why)
		}
		ctd := startTestContainerd(t)
		hostsDir := t.TempDir()
		reg.TrustIn(t, hostsDir)
		image := reg.pushContainerd(t, ctd.Address, hostsDir, "e2e/busybox-ctd:1")
		s := startServer(t, t.TempDir())
		a := startAgent(t, s, "ctd-reg", "29350-29399", "--container-runtime", "containerd", "--containerd-address", ctd.Address,
			"--containerd-certs-dir", hostsDir, "--allow-privileged") // HOST networking is a privilege
		s.cleanupApps("e2e")
		privateRegistryCases(t, s, a, reg, image, "HOST", "", "unauthorized")
	})
}

// privateRegistryCases runs the cases of TestPrivateRegistry on a node: image is in the
// registry, mode the pods' network mode (the containerd driver has no BRIDGE yet),
// daemonPrefix what the runtime puts before the registry's answer in a failed pull's
// message, unauthorized what that answer says to a wrong password.
func privateRegistryCases(t *testing.T, s *devServer, a *agentProc, reg *registry, image, mode, daemonPrefix, unauthorized string) {
	s.applySpec(t, reg.secret("regcred", reg.Password)+"\n"+reg.secret("badcred", "wrong-"+reg.Password))
	pulling := func(name, secret, image string) string {
		c := fmtSpec(`{"name":"web","image":%q,"imagePullPolicy":"Always","imagePullSecrets":[{"name":%q}],"command":"/bin/sh","args":["-c","exec sleep 100000"]%s}`,
			image, secret, withResources(""))
		return appSpec{name: name, ns: "e2e", mode: mode, containers: []string{c}}.json()
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
		s.eventsSay("task web: pull image "+image+": "+daemonPrefix, "-n", "e2e") // PullFailed
	}
	t.Run("a pull secret pulls the private image", func(t *testing.T) {
		s.applySpec(t, pulling("private", "regcred", image))
		tg := s.running(t, "e2e", "private", 1)[0]
		if daemonPrefix != "" { // Docker's
			if got := inspect(t, tg.Status.Tasks[0].Info.ID, "{{.Config.Image}}"); got != image {
				t.Errorf("the container runs %q, want %q", got, image)
			}
		}
		s.eventsSay("pulled image "+image, "-n", "e2e")
	})
	t.Run("a wrong password fails with the registry's answer", func(t *testing.T) {
		fails(t, "denied", "badcred", image, unauthorized)
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
			if strings.Contains(out, reg.Password) || strings.Contains(out, reg.auth(reg.Password)) {
				t.Errorf("the %s shows the password:\n%s", what, out)
			}
		}
	})
	for _, app := range []string{"private", "denied", "notag"} {
		s.mustBerth("delete", "application", app, "-n", "e2e")
	}
	waitUntil(t, 60*time.Second, "the apps' instances to go", func() bool {
		return len(s.taskGroups("e2e", "private"))+len(s.taskGroups("e2e", "denied"))+len(s.taskGroups("e2e", "notag")) == 0
	})
}

// registry is a distribution registry on loopback with TLS and one htpasswd user
// (internal/testutil/registry), and the docker client's config dir for login and push.
type registry struct {
	*testregistry.Registry
	dockerConfig string
}

// startRegistry starts the registry; the runtimes' subtests trust its CA each their way.
func startRegistry(t *testing.T) *registry {
	t.Helper()
	if why := testregistry.Missing(); why != "" {
		if os.Getenv("BERTH_REQUIRE_DOCKER") == "1" || os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
			t.Fatalf("BERTH_REQUIRE_DOCKER or BERTH_REQUIRE_CONTAINERD is 1 but %s", why)
		}
		t.Skip(why)
	}
	return &registry{Registry: testregistry.Start(t), dockerConfig: filepath.Join(t.TempDir(), "docker")}
}

// pushContainerd pushes the busybox image of the containerd at address (berth's
// namespace) to the registry's repo with containerd's client, trusting the registry
// through hostsDir as the driver does, and returns the image's name.
func (r *registry) pushContainerd(t *testing.T, address, hostsDir, repo string) string {
	t.Helper()
	cli, err := client.New(address)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), containerd.DefaultNamespace), time.Minute)
	defer cancel()
	img, err := cli.GetImage(ctx, "docker.io/"+testImage)
	if err != nil {
		t.Fatal(err)
	}
	hosts := config.ConfigureHosts(ctx, config.HostOptions{HostDir: config.HostDirFromRoot(hostsDir), DefaultScheme: "https",
		Credentials: func(string) (string, string, error) { return r.User, r.Password, nil }})
	ref := r.Host + "/" + repo
	if err := cli.Push(ctx, ref, img.Target(), client.WithResolver(docker.NewResolver(docker.ResolverOptions{Hosts: hosts}))); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
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
	ref := r.Host + "/" + repo
	r.docker(t, "", "tag", image, ref)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", ref).Run() })
	r.docker(t, r.Password, "login", r.Host, "-u", r.User, "--password-stdin")
	r.docker(t, "", "push", ref)
	r.docker(t, "", "logout", r.Host)
	r.docker(t, "", "rmi", ref)
	return ref
}

// auth is a docker config's auth of the user with password.
func (r *registry) auth(password string) string {
	return base64.StdEncoding.EncodeToString([]byte(r.User + ":" + password))
}

// secret is an image pull secret of namespace e2e for the registry.
func (r *registry) secret(name, password string) string {
	config := fmt.Sprintf(`{"auths":{"https://%s":{"auth":%q}}}`, r.Host, r.auth(password))
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":%q,"namespace":"e2e"},"type":%q,"datas":{%q:{"content":%q}}}`,
		name, v4.SecretTypeDockerConfigJSON, v4.DockerConfigJSONKey, base64.StdEncoding.EncodeToString([]byte(config)))
}
