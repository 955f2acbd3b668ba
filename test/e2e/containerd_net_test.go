package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// ctdCNI is the CNI network of the containerd agent: bridge + host-local + portmap on a
// bridge and a subnet of the test's own, removed at its end.
type ctdCNI struct {
	confDir, network string
	subnet           *net.IPNet
}

// containerdCNI writes the network config, or returns an empty confDir when the CNI
// plugins are missing (the network cases then skip).
func containerdCNI(t *testing.T) ctdCNI {
	t.Helper()
	if _, err := os.Stat("/usr/lib/cni/host-local"); err != nil {
		return ctdCNI{}
	}
	pid := os.Getpid()
	n := ctdCNI{confDir: t.TempDir(), network: "berth-ctd-e2e-" + strconv.Itoa(pid)}
	bridge := "ctde2e" + strconv.Itoa(pid%10000)
	cidr := fmt.Sprintf("10.78.%d.0/24", 20+pid%200)
	_, n.subnet, _ = net.ParseCIDR(cidr)
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": %q, "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}]}`, n.network, bridge, cidr)
	if err := os.WriteFile(filepath.Join(n.confDir, "10-berth.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", bridge).Run()
		os.RemoveAll(filepath.Join("/var/lib/cni/networks", n.network))
	})
	return n
}

func (n ctdCNI) require(t *testing.T) {
	t.Helper()
	if n.confDir != "" {
		return
	}
	if os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
		t.Fatal("CNI plugins missing (apt-get install containernetworking-plugins)")
	}
	t.Skip("no CNI plugins in /usr/lib/cni")
}

// A BRIDGE pod on containerd is served by the node's CNI network: it gets an IP of the
// network, its host port reaches the container (portmap), its init task ran in the same
// network, and deleting it releases the IP and removes the sandbox.
func containerdBridgePod(t *testing.T, s *devServer, n ctdCNI, ctdAddress string) {
	n.require(t)
	s.applySpec(t, appSpec{name: "ctd-bridge", ns: "e2e", containers: []string{
		container("prep", "busybox ip -o -4 addr show eth0 > /scratch/ip", scratch+`,"lifecycle":{"init":true}`),
		webContainer("web", "8080", scratch+`,"ports":[{"name":"http","containerPort":8080,"hostPort":0,"protocol":"http"}]`),
	}}.json())
	tg := s.running(t, "e2e", "ctd-bridge", 1)[0]
	var web v4.TaskStatus
	for _, ts := range tg.Status.Tasks {
		if ts.Name == "web" {
			web = ts
		}
	}
	ip := web.Info.IPAddress
	if !n.subnet.Contains(net.ParseIP(ip)) {
		t.Fatalf("web's IP %q is not from the CNI network %s", ip, n.subnet)
	}
	lease := filepath.Join("/var/lib/cni/networks", n.network, ip)
	if _, err := os.Stat(lease); err != nil {
		t.Errorf("host-local lease: %v", err)
	}
	if r := s.execIn("e2e", tg.Metadata.Name, "web", "cat", "/scratch/ip"); !strings.Contains(r.stdout, " "+ip+"/") {
		t.Errorf("the init task's eth0: %q %s, want %s", r.stdout, r.stderr, ip)
	}
	if env := envOf(s.execIn("e2e", tg.Metadata.Name, "web", "env").stdout); env["BCS_CONTAINER_IP"] != ip {
		t.Errorf("BCS_CONTAINER_IP = %q, want %s", env["BCS_CONTAINER_IP"], ip)
	}
	hostPort := port(tg, "http")
	waitUntil(t, 20*time.Second, "the pod's httpd on its host port", func() bool {
		code, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(hostPort) + "/index.html")
		return err == nil && code == 200 && body == "hello\n"
	})
	s.mustBerth("delete", "application", "ctd-bridge", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the IP to be released", func() bool {
		_, err := os.Stat(lease)
		return os.IsNotExist(err) && len(s.taskGroups("e2e", "ctd-bridge")) == 0
	})
	out, _ := exec.Command("ctr", "--address", ctdAddress, "-n", "berth", "containers", "ls", "-q").Output()
	if strings.Contains(string(out), "pod-e2e."+tg.Metadata.Name) {
		t.Errorf("the sandbox is still there: %s", out)
	}
}

// A NONE pod that starts with an init task gets a network holder (the sandbox image,
// imported on the node): every task, the init task too, is in its network namespace.
func containerdHolderPod(t *testing.T, s *devServer) {
	s.applySpec(t, appSpec{name: "ctd-holder", ns: "e2e", mode: "NONE", containers: []string{
		container("prep", "busybox readlink /proc/self/ns/net > /scratch/netns", scratch+`,"lifecycle":{"init":true}`),
		container("main", "exec sleep 100000", scratch),
	}}.json())
	tg := s.running(t, "e2e", "ctd-holder", 1)[0]
	r := s.execIn("e2e", tg.Metadata.Name, "main", "sh", "-c", "cat /scratch/netns; busybox readlink /proc/self/ns/net")
	lines := strings.Fields(r.stdout)
	host, _ := os.Readlink("/proc/self/ns/net")
	if r.code != 0 || len(lines) != 2 || lines[0] != lines[1] || lines[0] == host {
		t.Errorf("init task and main task in %q (exit %d, %s): want one namespace, not the host's %s", lines, r.code, r.stderr, host)
	}
	s.mustBerth("delete", "application", "ctd-holder", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the pod's end", func() bool { return len(s.taskGroups("e2e", "ctd-holder")) == 0 })
}
