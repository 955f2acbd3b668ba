package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/hostports/hostportstest"
)

// writeSockets writes a /proc/net/tcp and udp listing the given "port/proto" sockets as
// serving (LISTEN, or unconnected UDP), each also in tcp6 when it ends with "6".
func writeSockets(t *testing.T, root string, socks ...string) {
	t.Helper()
	header := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	tables := map[string]string{"tcp": header, "tcp6": header, "udp": header}
	for i, s := range socks {
		var port int
		var proto string
		fmt.Sscanf(strings.Replace(s, "/", " ", 1), "%d %s", &port, &proto)
		state, addr := "0A", "00000000"
		if proto == "udp" {
			state = "07"
		}
		if proto == "tcp6" {
			proto, addr = "tcp6", "00000000000000000000000000000000"
		}
		tables[proto] += fmt.Sprintf("   %d: %s:%04X %s:0000 %s 00000000:00000000 00:00000000 00000000     0        0 %d 1\n", i, addr, port, addr, state, 5000+i)
	}
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range tables {
		if err := os.WriteFile(filepath.Join(root, "net", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The agent reports the ports of its ranges that other programs serve on, once each,
// not its own task groups' ports nor ports outside its ranges, except the ones a start
// found taken, which it watches (with their holder) until they are free.
func TestBusyPortsFromProc(t *testing.T) {
	root := t.TempDir()
	b := newBusyPorts(root, []v4.PortRange{{Begin: 31000, End: 31009}})
	writeSockets(t, root, "31000/tcp", "31001/tcp", "31001/tcp6", "31002/udp", "31003/tcp", "8080/tcp", "9090/tcp", "32000/udp")
	b.taken([]v4.BusyPort{{Port: 9090, Protocol: "tcp", Holder: "nginx (pid 7)"}, {Port: 9091, Protocol: "tcp"}})
	got, err := b.read(map[int]bool{31003: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[9090/tcp held by nginx (pid 7) 31000/tcp 31001/tcp 31002/udp]"; fmt.Sprint(got) != want {
		t.Fatalf("busy ports %v, want %s", got, want)
	}
	if !slices.Equal(b.list(), got) {
		t.Errorf("list %v", b.list())
	}
	if _, watched := b.watched[v4.BusyPort{Port: 9091, Protocol: "tcp"}]; watched {
		t.Error("a taken port that is free again is still watched")
	}

	// Read with the ports of a run still starting that then found 31000 taken: the
	// holder it found is kept for the next read.
	b.taken([]v4.BusyPort{{Port: 31000, Protocol: "tcp", Holder: "nc (pid 8)"}})
	if got, _ = b.read(map[int]bool{31000: true, 31003: true}); fmt.Sprint(got) != "[9090/tcp held by nginx (pid 7) 31001/tcp 31002/udp]" {
		t.Fatalf("with 31000 our own: %v", got)
	}
	if got, _ = b.read(nil); !slices.Contains(got, v4.BusyPort{Port: 31000, Protocol: "tcp", Holder: "nc (pid 8)"}) {
		t.Fatalf("the holder of 31000 was forgotten: %v", got)
	}

	writeSockets(t, root, "31001/tcp") // the others went away
	if got, err = b.read(nil); err != nil || fmt.Sprint(got) != "[31001/tcp]" {
		t.Fatalf("after: %v %v", got, err)
	}
	if len(b.watched) != 0 {
		t.Errorf("watched %v", b.watched)
	}
}

// A range full of other programs' ports is reported up to the bound, lowest first.
func TestBusyPortsBounded(t *testing.T) {
	root := t.TempDir()
	b := newBusyPorts(root, []v4.PortRange{{Begin: 30000, End: 32000}})
	var socks []string
	for p := 30000; p < 30000+v4.MaxBusyPorts+10; p++ {
		socks = append(socks, fmt.Sprintf("%d/tcp", p))
	}
	writeSockets(t, root, socks...)
	got, err := b.read(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != v4.MaxBusyPorts || got[0].Port != 30000 || got[len(got)-1].Port != 30000+v4.MaxBusyPorts-1 {
		t.Fatalf("%d ports, %v .. %v", len(got), got[0], got[len(got)-1])
	}
	if errs := v4.ValidateBusyPorts(got); len(errs) > 0 {
		t.Fatal(errs)
	}
}

// A port of the node's range that another program (this test) holds shows in the node's
// status; a task group given it fails before it starts, naming the holder, and its
// port stays reported.
func TestAgentReportsBusyPortsAndRefusesTakenOnes(t *testing.T) {
	held, release := hostportstest.HoldTCP(t)
	c := newCluster(t)
	drv := fake.New("process")
	startAgent(t, c, t.TempDir(), drv, func(cfg *Config) {
		cfg.PortRanges = []v4.PortRange{{Begin: held, End: held}}
		cfg.BusyPortsInterval = 100 * time.Millisecond
	})
	busy := func() []v4.BusyPort {
		n, err := testStore.Get(context.Background(), v4.KindNode, "", testNode)
		if err != nil {
			return nil
		}
		return n.(*v4.Node).Status.BusyPorts
	}
	waitFor(t, "the held port in the node's busy ports", func() bool {
		b := busy()
		return len(b) == 1 && b[0].Port == held && b[0].Protocol == "tcp"
	})

	tg := processTG("taken")
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: held, Protocol: "tcp", Random: true}}
	tg.Spec.Template.Spec.Processes[0].Ports = []v4.Port{{Name: "http"}}
	createTG(t, tg)
	got := waitPhase(t, "taken", v4.StatusFailed)
	self := fmt.Sprintf("(pid %d)", os.Getpid())
	if got.Status.Reason != v4.ReasonPortConflict || len(got.Status.PortsTaken) != 1 || !strings.HasSuffix(got.Status.PortsTaken[0].Holder, self) {
		t.Fatalf("status %+v", got.Status)
	}
	if !strings.Contains(got.Status.Message, fmt.Sprintf("host port %d/tcp is in use by ", held)) {
		t.Errorf("message %q", got.Status.Message)
	}
	if len(drv.Started()) != 0 {
		t.Errorf("started %v", drv.Started())
	}
	waitFor(t, "the holder in the node's busy ports", func() bool {
		b := busy()
		return len(b) == 1 && strings.HasSuffix(b[0].Holder, self)
	})
	release()
	waitFor(t, "the freed port off the node's busy ports", func() bool { return len(busy()) == 0 })
}
