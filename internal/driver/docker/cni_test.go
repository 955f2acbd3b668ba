package docker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/testutil/loopback"
)

// cniDriver is a driver with a bridge + host-local + portmap network on 10.88.7.0/24
// (traffic stays on this machine), and the IP lease directory to check.
func cniDriver(t *testing.T) (*Driver, string) {
	t.Helper()
	needDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: CNI plugins need root")
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("skipping: no CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)")
	}
	name := "berth-test-" + runTag
	bridge := "berthbr" + runTag
	if len(bridge) > 15 {
		bridge = bridge[:15]
	}
	conf := `{"cniVersion": "1.0.0", "name": "` + name + `", "plugins": [
	  {"type": "bridge", "bridge": "` + bridge + `", "isGateway": true, "ipMasq": false,
	   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.7.0/24"}]]}},
	  {"type": "portmap", "capabilities": {"portMappings": true}}]}`
	confDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(confDir, "10-berth.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	leases := filepath.Join("/var/lib/cni/networks", name)
	t.Cleanup(func() {
		os.RemoveAll(leases)
		exec.Command("ip", "link", "del", bridge).Run()
	})
	d, err := New(Config{DataDir: t.TempDir(), CNIConfDir: confDir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, leases
}

func leased(leases, ip string) bool {
	_, err := os.Stat(filepath.Join(leases, ip))
	return err == nil
}

func TestCNIPod(t *testing.T) {
	d, leases := cniDriver(t)
	ctx := ctxT(t, 60*time.Second)
	pod := "test." + runTag + ".cnipod"
	t.Cleanup(func() { d.TeardownPod(context.Background(), pod) })
	hostPort := loopback.FreePort(t)
	labels := map[string]string{testLabel: runTag, driver.LabelTaskGroup: "test/cnipod"}
	ports := []driver.PortBinding{{Name: "http", ContainerPort: 8080, HostPort: hostPort}}
	sandbox, ip, err := d.SetupPod(ctx, pod, labels, ports)
	if err != nil {
		t.Fatal(err)
	}
	_, subnet, _ := net.ParseCIDR("10.88.7.0/24")
	if !subnet.Contains(net.ParseIP(ip)) || !leased(leases, ip) {
		t.Fatalf("pod IP %q: not from the range or not leased", ip)
	}
	if s2, ip2, err := d.SetupPod(ctx, pod, labels, ports); err != nil || s2 != sandbox || ip2 != ip {
		t.Fatalf("second setup: %s %s %v, want the same", s2, ip2, err)
	}

	web := httpdTask(t, d, "web", 8080, "ok-cni")
	web.Setup.NetworkMode, web.Setup.JoinTask = "", sandbox
	st := mustStart(t, d, web)
	if st.Info.IPAddress != ip || st.Info.NetworkMode != "user" {
		t.Fatalf("task in the pod: %+v, want IP %s", st.Info, ip)
	}
	if got := httpGet(t, "http://"+ip+":8080/"); got != "ok-cni\n" {
		t.Fatalf("GET the pod IP: %q", got)
	}
	// portmap forwards the pod's host port, from loopback too.
	if got := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(hostPort)+"/"); got != "ok-cni\n" {
		t.Fatalf("GET the pod's host port: %q", got)
	}
	if ids, err := d.PodIDs(ctx); err != nil || len(ids) == 0 {
		t.Fatalf("PodIDs: %v %v", ids, err)
	}
	if list, _ := d.List(ctx); containsID(list, sandbox) {
		t.Fatal("the sandbox is listed as a task")
	}

	if err := d.Remove(ctx, web.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.TeardownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if leased(leases, ip) {
		t.Fatalf("IP %s still leased after teardown", ip)
	}
	if _, err := rawContainer(ctx, sandbox); err == nil {
		t.Fatal("sandbox left after teardown")
	}
	if err := d.TeardownPod(ctx, pod); err != nil {
		t.Fatalf("second teardown: %v", err)
	}
}

// TestCNISandboxRemovedBehindOurBack is BCS's leak: the sandbox is gone, DEL still
// releases the lease.
func TestCNISandboxRemovedBehindOurBack(t *testing.T) {
	d, leases := cniDriver(t)
	ctx := ctxT(t, 60*time.Second)
	pod := "test." + runTag + ".cnigone"
	t.Cleanup(func() { d.TeardownPod(context.Background(), pod) })
	sandbox, ip, err := d.SetupPod(ctx, pod, map[string]string{testLabel: runTag}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rawRemove(ctx, sandbox); err != nil {
		t.Fatal(err)
	}
	if !leased(leases, ip) {
		t.Fatal("lease gone with the sandbox: nothing to test")
	}
	// Setting the pod up again replaces the dead sandbox (and its lease).
	sandbox2, ip2, err := d.SetupPod(ctx, pod, map[string]string{testLabel: runTag}, nil)
	if err != nil || sandbox2 == sandbox {
		t.Fatalf("setup after the sandbox died: %s %v", sandbox2, err)
	}
	if ip2 != ip && leased(leases, ip) {
		t.Fatalf("old lease %s kept after the pod was set up again as %s", ip, ip2)
	}
	// Kill it again, then tear down.
	if err := rawRemove(ctx, sandbox2); err != nil {
		t.Fatal(err)
	}
	if err := d.TeardownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if leased(leases, ip2) {
		t.Fatalf("IP %s still leased after the sandbox was removed and the pod torn down", ip2)
	}
	if p, _ := d.loadPod(pod); p != nil {
		t.Fatal("pod state left")
	}
}

func containsID(list []driver.State, dockerID string) bool {
	for _, s := range list {
		if s.Info.ID == dockerID {
			return true
		}
	}
	return false
}
