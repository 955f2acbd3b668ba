package hostports

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/hostports/hostportstest"
)

// Tables as the kernel writes them: a listener on 127.0.0.1:8080 (0x1F90), a
// connection, an IPv6 listener on [::]:31000 (0x7918), a UDP server on 0.0.0.0:31001
// (0x7919) and a connected UDP socket (a client's), which is left out.
const (
	tcp4 = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 20 4 30 10 -1
   2: garbage line
`
	tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:7918 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1003 1 0000000000000000 100 0 0 10 0
`
	udp4 = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  10: 00000000:7919 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1004 2 0000000000000000 0
  11: 0100007F:7920 0100007F:0035 01 00000000:00000000 00:00000000 00000000     0        0 1005 2 0000000000000000 0
`
)

// fakeProc writes a /proc with the tables above and process 42 ("nginx") holding the
// IPv6 listener through fd 3.
func fakeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{"net/tcp": tcp4, "net/tcp6": tcp6, "net/udp": udp4, "42/comm": "nginx\n", "7/comm": "sshd\n"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid, fds := range map[string][]string{"7": {"/dev/null", "socket:[999]"}, "42": {"/dev/null", "pipe:[5]", "anon_inode:[eventfd]", "socket:[1003]"}} {
		dir := filepath.Join(root, pid, "fd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, target := range fds {
			if err := os.Symlink(target, filepath.Join(dir, fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestBoundReadsServingSockets(t *testing.T) {
	socks, err := Bound(fakeProc(t)) // no udp6 table: skipped
	if err != nil {
		t.Fatal(err)
	}
	want := []Socket{{8080, "tcp", 1001}, {31000, "tcp", 1003}, {31001, "udp", 1004}}
	if !slices.Equal(socks, want) {
		t.Fatalf("sockets %+v, want %+v", socks, want)
	}
}

func TestHolderFindsTheProcess(t *testing.T) {
	root := fakeProc(t)
	if h := Holder(root, 1003); h != "nginx (pid 42)" {
		t.Errorf("holder of 1003: %q", h)
	}
	if h := Holder(root, 1004); h != "" {
		t.Errorf("holder of a socket nobody holds: %q", h)
	}
}

// Check finds a port the test holds, on its transport only, and names the test's
// process from the real /proc.
func TestCheckFindsTakenPorts(t *testing.T) {
	held, _ := hostportstest.HoldTCP(t)
	heldUDP := hostportstest.HoldUDP(t)
	free := freePort(t)

	c := &Checker{}
	if err := c.Check([]v4.AllocatedPort{{Name: "a", HostPort: free}, {Name: "b", HostPort: held, Protocol: "udp"}}); err != nil {
		t.Fatalf("free ports: %v", err)
	}
	err := c.Check([]v4.AllocatedPort{{Name: "a", HostPort: free}, {Name: "b", HostPort: held, Protocol: "http"}, {Name: "c", HostPort: heldUDP, Protocol: "udp"}})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Ports) != 2 {
		t.Fatalf("got %v, want a conflict on two ports", err)
	}
	self := fmt.Sprintf("(pid %d)", os.Getpid())
	if p := ce.Ports[0]; p.Port != held || p.Protocol != "tcp" || !strings.HasSuffix(p.Holder, self) {
		t.Errorf("first port %+v, want %d/tcp held by this test %s", p, held, self)
	}
	if p := ce.Ports[1]; p.Port != heldUDP || p.Protocol != "udp" || !strings.HasSuffix(p.Holder, self) {
		t.Errorf("second port %+v, want %d/udp held by this test", p, heldUDP)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("host ports: %d/tcp is in use by ", held)) {
		t.Errorf("message %q", msg)
	}
}

// Only "in use" is a conflict: other bind errors are the task's business.
func TestCheckIgnoresOtherBindErrors(t *testing.T) {
	c := &Checker{listen: func(string, int) error { return syscall.EACCES }}
	if err := c.Check([]v4.AllocatedPort{{HostPort: 80}}); err != nil {
		t.Fatalf("EACCES is not a conflict: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Docker's messages of a taken port, and the ports they name.
func TestDockerMessages(t *testing.T) {
	ports := []v4.AllocatedPort{{Name: "http", HostPort: 31000}, {Name: "dns", HostPort: 31001, Protocol: "udp"}, {Name: "x", HostPort: 80}}
	tests := []struct {
		msg   string
		inUse bool
		named int // 0: none
	}{
		{"driver failed programming external connectivity on endpoint berth-x (4f2a): Bind for 0.0.0.0:31000 failed: port is already allocated", true, 31000},
		{"Error starting userland proxy: listen udp4 0.0.0.0:31001: bind: address already in use", true, 31001},
		{"failed to set up container networking: driver failed programming external connectivity on endpoint x: failed to bind host port for 0.0.0.0:31000:172.17.0.2:80/tcp: address already in use", true, 31000},
		{"OCI runtime create failed: exec: \"web\": executable file not found in $PATH", false, 0},
	}
	for _, tc := range tests {
		if InUseMessage(tc.msg) != tc.inUse {
			t.Errorf("InUseMessage(%q) = %v", tc.msg, !tc.inUse)
		}
		if p, ok := PortIn(tc.msg, ports); p.HostPort != tc.named || ok != (tc.named != 0) {
			t.Errorf("PortIn(%q) = %v, want %d", tc.msg, p, tc.named)
		}
	}
	// Nothing named and nothing taken now: every port, since the driver said one was.
	c := &Checker{listen: func(string, int) error { return nil }}
	if ce := c.Conflict("port is already allocated", ports[:2]); len(ce.Ports) != 2 || ce.Ports[1] != (v4.BusyPort{Port: 31001, Protocol: "udp"}) {
		t.Errorf("conflict %+v", ce)
	}
}
