package containerd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/podsandbox"
	"github.com/berthhq/berth/internal/testutil/loopback"
)

// cniNet is the test's CNI network: bridge + host-local + portmap on a bridge and a
// subnet of the test's own (traffic stays on this machine), removed at its end.
type cniNet struct {
	confDir string
	leases  string // host-local's lease directory
	subnet  *net.IPNet
}

func newCNINet(t *testing.T) cniNet {
	t.Helper()
	requireContainerd(t)
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("skipping: no CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)")
	}
	tag := strconv.Itoa(os.Getpid()%10000) + strconv.Itoa(len(t.Name())%10)
	name := "berth-ctd-test-" + tag
	bridge := "ctdbr" + tag
	cidr := fmt.Sprintf("10.77.%d.0/24", 20+(os.Getpid()+len(t.Name()))%200)
	_, subnet, _ := net.ParseCIDR(cidr)
	conf := `{"cniVersion": "1.0.0", "name": "` + name + `", "plugins": [
	  {"type": "bridge", "bridge": "` + bridge + `", "isGateway": true, "ipMasq": false,
	   "ipam": {"type": "host-local", "ranges": [[{"subnet": "` + cidr + `"}]]}},
	  {"type": "portmap", "capabilities": {"portMappings": true}}]}`
	confDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(confDir, "10-berth.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	n := cniNet{confDir: confDir, leases: filepath.Join("/var/lib/cni/networks", name), subnet: subnet}
	t.Cleanup(func() {
		os.RemoveAll(n.leases)
		exec.Command("ip", "link", "del", bridge).Run()
	})
	return n
}

func (n cniNet) leased(ip string) bool {
	_, err := os.Stat(filepath.Join(n.leases, ip))
	return err == nil
}

// cniDriver is a driver on the package's containerd with the test's CNI network.
func cniDriver(t *testing.T) (*Driver, cniNet) {
	n := newCNINet(t)
	d, _ := newDriver(t, func(c *Config) { c.CNIConfDir = n.confDir })
	return d, n
}

// setupPod sets pod up with the driver's node label and tears it down at the end.
func setupPod(t *testing.T, d *Driver, pod string, ports []driver.PortBinding) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { d.TeardownPod(context.Background(), pod) })
	sandbox, ip, err := d.SetupPod(ctx, pod, map[string]string{driver.LabelNode: d.owner.Node, driver.LabelTaskGroup: "ns/tg"}, ports)
	if err != nil {
		t.Fatal(err)
	}
	return sandbox, ip
}

func podID(t *testing.T) string {
	return "ns." + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	var last error
	for range 50 { // httpd may not listen yet
		resp, err := c.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return string(b)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", url, last)
	return ""
}

// A CNI pod: the sandbox gets an IP of the network, two tasks that join it share it
// (and its loopback), a port mapping reaches the task from the host, and the teardown
// releases the IP and removes the sandbox.
func TestCNIPod(t *testing.T) {
	d, n := cniDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := podID(t)
	hostPort := loopback.FreePort(t)
	ports := []driver.PortBinding{{Name: "http", ContainerPort: 8080, HostPort: hostPort}}
	sandbox, ip := setupPod(t, d, pod, ports)
	if !n.subnet.Contains(net.ParseIP(ip)) || !n.leased(ip) {
		t.Fatalf("pod IP %q: not from %s or not leased", ip, n.subnet)
	}
	if s2, ip2, err := d.SetupPod(ctx, pod, nil, ports); err != nil || s2 != sandbox || ip2 != ip {
		t.Fatalf("second setup: %s %s %v, want the same", s2, ip2, err)
	}

	web := task(t, "web", "mkdir -p /tmp/www && echo ok-ctd >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www")
	side := task(t, "side", "exec sleep 100000")
	for _, tk := range []*driver.Task{web, side} {
		tk.Setup.NetworkMode, tk.Setup.JoinTask = "", sandbox
		st := start(t, d, tk)
		if st.Info.IPAddress != ip || st.Info.NetworkMode != "user" {
			t.Fatalf("%s in the pod: %+v, want IP %s", tk.Name, st.Info, ip)
		}
		if out := execOK(t, d, tk.ID, "busybox ip -o -4 addr show eth0"); !strings.Contains(out, " "+ip+"/") {
			t.Errorf("%s's eth0: %q, want %s", tk.Name, out, ip)
		}
	}
	if got := httpGet(t, "http://"+ip+":8080/"); got != "ok-ctd\n" {
		t.Fatalf("GET the pod IP: %q", got)
	}
	if got := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(hostPort)+"/"); got != "ok-ctd\n" {
		t.Fatalf("GET the pod's host port: %q", got)
	}
	if got := execOK(t, d, side.ID, "wget -qO- 127.0.0.1:8080/"); got != "ok-ctd\n" {
		t.Errorf("side to web on the pod's loopback: %q", got)
	}
	if ids, err := d.PodIDs(ctx); err != nil || !slices.Contains(ids, pod) {
		t.Fatalf("PodIDs: %v %v", ids, err)
	}
	if list, _ := d.List(ctx); slices.ContainsFunc(list, func(s driver.State) bool { return s.Info.ID == sandbox }) {
		t.Fatal("the sandbox is listed as a task")
	}

	for _, tk := range []*driver.Task{web, side} {
		if err := d.Remove(ctx, tk.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.TeardownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if n.leased(ip) {
		t.Fatalf("IP %s still leased after teardown", ip)
	}
	if _, err := d.cli.LoadContainer(d.ctx(ctx), sandbox); err == nil {
		t.Fatal("sandbox left after teardown")
	}
	if ids, _ := d.PodIDs(ctx); slices.Contains(ids, pod) {
		t.Errorf("PodIDs after teardown: %v", ids)
	}
	if err := d.TeardownPod(ctx, pod); err != nil {
		t.Fatalf("second teardown: %v", err)
	}
}

// The sandbox killed or removed behind berth's back: a setup replaces it, and the
// teardown still releases the lease (CNI DEL without a namespace).
func TestCNISandboxGone(t *testing.T) {
	d, n := cniDriver(t)
	ctx, cancel := context.WithTimeout(d.ctx(context.Background()), 2*time.Minute)
	defer cancel()
	pod := podID(t)
	sandbox, ip := setupPod(t, d, pod, nil)
	kill := func(id string) {
		c, err := d.cli.LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		task, err := c.Task(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		exited, err := task.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
	}
	// Removed: the task and the container are gone.
	c, err := d.cli.LoadContainer(ctx, sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.removeContainer(ctx, c); err != nil {
		t.Fatal(err)
	}
	if !n.leased(ip) {
		t.Fatal("lease gone with the sandbox: nothing to test")
	}
	_, ip2, err := d.SetupPod(ctx, pod, map[string]string{driver.LabelNode: d.owner.Node}, nil)
	if err != nil {
		t.Fatalf("setup after the sandbox was removed: %v", err)
	}
	if ip2 != ip && n.leased(ip) {
		t.Fatalf("old lease %s kept after the pod was set up again as %s", ip, ip2)
	}
	// Killed: the container stays, its task ended.
	kill(sandbox)
	if err := d.TeardownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if n.leased(ip2) {
		t.Fatalf("IP %s still leased after the sandbox was killed and the pod torn down", ip2)
	}
	if _, err := d.cli.LoadContainer(ctx, sandbox); err == nil {
		t.Error("killed sandbox left after teardown")
	}
	if p, _ := d.podStates().Load(pod); p != nil {
		t.Error("pod state left")
	}
	// A killed sandbox is set up again, not returned.
	_, ip3 := setupPod(t, d, pod, nil)
	kill(sandbox)
	if _, ip4, err := d.SetupPod(ctx, pod, nil, nil); err != nil || (ip4 != ip3 && n.leased(ip3)) {
		t.Fatalf("setup after a kill: %s %v (old %s leased %v)", ip4, err, ip3, n.leased(ip3))
	}
}

// Another cluster's driver on the same containerd neither lists nor tears down the pod.
func TestCNIPodOfAnotherCluster(t *testing.T) {
	d, n := cniDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := podID(t)
	sandbox, ip := setupPod(t, d, pod, nil)
	other, _ := newDriver(t, func(c *Config) {
		c.CNIConfDir = n.confDir
		c.Owner = driver.Owner{Cluster: "sha256:" + strings.Repeat("cd", 32), Node: d.owner.Node}
	})
	if ids, err := other.PodIDs(ctx); err != nil || slices.Contains(ids, pod) {
		t.Errorf("another cluster lists the pod: %v %v", ids, err)
	}
	if err := other.TeardownPod(ctx, pod); err != nil {
		t.Fatalf("another cluster's teardown of a pod it does not have: %v", err)
	}
	// Its sandbox name differs (cluster tag); the real one is not its to join either.
	tk := task(t, "intruder", "exec sleep 100000")
	tk.Setup.NetworkMode, tk.Setup.JoinTask = "", sandbox
	if _, err := other.Start(ctx, tk); err == nil {
		other.Remove(ctx, tk.ID)
		t.Error("another cluster's task joined the sandbox")
	}
	if !n.leased(ip) {
		t.Fatal("the lease went with another cluster's teardown")
	}
}

// The network holder's image is imported on demand and runs as a task (its sleep is
// the entrypoint), which another task joins.
func TestNetworkHolder(t *testing.T) {
	d, _ := newDriver(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := d.HolderImage(ctx)
	if err != nil || img != podsandbox.Image {
		t.Fatalf("HolderImage: %q %v", img, err)
	}
	if img2, err := d.HolderImage(ctx); err != nil || img2 != img {
		t.Fatalf("HolderImage again: %q %v", img2, err)
	}
	holder := task(t, v4.NetworkHolderTask, "")
	holder.Container = &v4.Container{Image: img, ImagePullPolicy: v4.PullIfNotPresent}
	holder.Setup.NetworkMode = "NONE"
	start(t, d, holder)
	app := task(t, "app", "exec sleep 100000")
	app.Setup.NetworkMode, app.Setup.JoinTask = "", holder.ID
	start(t, d, app)
	hns := execOK(t, d, holder.ID, "busybox readlink /proc/1/ns/net")
	if ans := execOK(t, d, app.ID, "busybox readlink /proc/1/ns/net"); ans != hns || hns == "" {
		t.Errorf("app in %q, holder in %q", ans, hns)
	}
}

// Pod IDs that make no container name or leave the state directory are refused before
// containerd is asked.
func TestPodIDsValidated(t *testing.T) {
	d, err := New(Config{DataDir: t.TempDir(), Address: "/nonexistent.sock", LoggerPath: "/bin/" + LoggerName})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, id := range []string{"", "../x", "a/b", "ns..x", "ns. x", strings.Repeat("a", 100) + "/"} {
		if _, _, err := d.SetupPod(context.Background(), id, nil, nil); err == nil || !strings.Contains(err.Error(), "invalid ID") {
			t.Errorf("SetupPod(%q): %v", id, err)
		}
		if err := d.TeardownPod(context.Background(), id); err == nil || !strings.Contains(err.Error(), "invalid ID") {
			t.Errorf("TeardownPod(%q): %v", id, err)
		}
	}
	if !d.BridgeThroughCNI() {
		t.Error("BRIDGE is not served through CNI")
	}
	// A task ID is never taken for a sandbox, whatever it looks like.
	if _, err := d.sandbox(context.Background(), "pod-ns.x"); err == nil {
		t.Error("a bare pod ID taken for a sandbox")
	}
}
