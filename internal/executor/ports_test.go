package executor

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/hostports"
)

// A process pod whose host port another program holds fails before anything starts,
// with the reason the controllers act on and the port's holder.
func TestTakenHostPortFailsThePodBeforeItStarts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := ln.Addr().(*net.TCPAddr).Port
	h := newHarness(t, func(c *Config) { c.Ports = &hostports.Checker{} })
	tg := processTG("tg1", v4.ProcessTask{ProcName: "web", StartCmd: "./web", Ports: []v4.Port{{Name: "http", HostPort: 0}}})
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: held, Protocol: "tcp", Random: true}}
	h.run(tg)
	st := h.rec.waitPhase(t, "tg1", v4.StatusFailed)
	if len(h.proc.Started()) != 0 {
		t.Errorf("tasks started: %v", h.proc.Started())
	}
	if st.Reason != v4.ReasonPortConflict || len(st.PortsTaken) != 1 || st.PortsTaken[0].Port != held || st.PortsTaken[0].Protocol != "tcp" {
		t.Fatalf("reason %q ports %+v", st.Reason, st.PortsTaken)
	}
	if want := fmt.Sprintf("cannot start: host port %d/tcp is in use by ", held); !strings.HasPrefix(st.Message, want) {
		t.Errorf("message %q, want it to start with %q", st.Message, want)
	}
	if !strings.Contains(st.PortsTaken[0].Holder, "(pid ") {
		t.Errorf("holder %q not named", st.PortsTaken[0].Holder)
	}
}

// Docker's "port is already allocated" from the driver is a port conflict on the port
// its message names; any other start failure is not.
func TestDriverPortInUseIsAConflict(t *testing.T) {
	h := newHarness(t)
	tg := containerTG("tg2", "web")
	tg.Spec.Template.Spec.NetworkMode = "BRIDGE"
	tg.Spec.Template.Spec.Containers[0].Ports = []v4.Port{{Name: "http", ContainerPort: 80}, {Name: "dns", ContainerPort: 53, Protocol: "udp"}}
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31007, Random: true}, {Name: "dns", HostPort: 31008, Protocol: "udp", Random: true}}
	h.docker.FailNextStart("web", driver.PortInUse(errors.New("start task x: driver failed programming external connectivity on endpoint berth-x: Bind for 0.0.0.0:31008 failed: port is already allocated")))
	h.run(tg)
	st := h.rec.waitPhase(t, "tg2", v4.StatusFailed)
	if st.Reason != v4.ReasonPortConflict || len(st.PortsTaken) != 1 || st.PortsTaken[0] != (v4.BusyPort{Port: 31008, Protocol: "udp"}) {
		t.Fatalf("reason %q ports %+v", st.Reason, st.PortsTaken)
	}

	other := containerTG("tg3", "web")
	other.Spec.Ports = tg.Spec.Ports
	h.docker.FailNextStart("web", errors.New("image busybox: not found"))
	h.e.Run(t.Context(), other)
	if st := h.rec.waitPhase(t, "tg3", v4.StatusFailed); st.Reason != "" || st.PortsTaken != nil {
		t.Fatalf("another failure got reason %q ports %+v", st.Reason, st.PortsTaken)
	}
}
