package executor

import (
	"context"
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// On a driver without a bridge (containerd: driver.CNIBridge), a BRIDGE pod is a CNI
// pod: a sandbox on the node's CNI network takes its port bindings and its tasks join
// it; a pod that starts with an init task needs no holder then. USER and NONE pods keep
// their modes.
func TestBridgePodIsACNIPodOnADriverWithoutABridge(t *testing.T) {
	h, d := newDockerHarness(t)
	d.SetBridgeThroughCNI(true)
	h.run(initBridgePod("web"))
	waitStarted(t, d, id("web", "migrate"))
	d.Exit(id("web", "migrate"), 0)
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)

	podID := testNS + ".web"
	setups := d.Setups()
	wantBindings := []driver.PortBinding{
		{Name: "http", ContainerPort: 8080, HostPort: 31005, Protocol: "tcp"},
		{Name: "dns", ContainerPort: 53, HostPort: 39053, Protocol: "udp"},
	}
	if len(setups) != 1 || setups[0].ID != podID || !slices.Equal(setups[0].Ports, wantBindings) {
		t.Fatalf("setups = %+v, want one for %s with %+v", setups, podID, wantBindings)
	}
	if _, ok := d.Task(id("web", v4.NetworkHolderTask)); ok {
		t.Error("a network holder beside the CNI sandbox")
	}
	for i, n := range []string{"migrate", "web", "side"} {
		tk, _ := d.Task(id("web", n))
		if tk.Setup.JoinTask != "sandbox-"+podID || tk.Setup.NetworkMode != "" || len(tk.Setup.PortBindings) != 0 {
			t.Errorf("%s: join %q mode %q bindings %v", n, tk.Setup.JoinTask, tk.Setup.NetworkMode, tk.Setup.PortBindings)
		}
		if e := envOf(tk); e["BCS_CONTAINER_IP"] != testPodIP || (n == "web" && e["PORT_http"] != "31005") {
			t.Errorf("%s env = %v", n, e)
		}
		if st.Tasks[i].Info.IPAddress != testPodIP {
			t.Errorf("%s IP = %q, want the sandbox's", n, st.Tasks[i].Info.IPAddress)
		}
	}
	h.e.Kill(testNS, "web")
	if err := h.e.Remove(context.Background(), testNS, "web"); err != nil {
		t.Fatal(err)
	}
	if got := d.Teardowns(); len(got) == 0 || got[0] != podID || d.Sandbox(podID) {
		t.Errorf("teardowns = %v, sandbox left %v", got, d.Sandbox(podID))
	}

	// NONE keeps its namespace of its own: no sandbox.
	tg := containerTG("none", "a")
	tg.Spec.Template.Spec.NetworkMode = "NONE"
	h.run(tg)
	h.rec.waitPhase(t, "none", v4.StatusRunning)
	if a, _ := d.Task(id("none", "a")); a.Setup.NetworkMode != "NONE" || len(d.Setups()) != 1 {
		t.Errorf("NONE pod: mode %q, setups %d", a.Setup.NetworkMode, len(d.Setups()))
	}
}
