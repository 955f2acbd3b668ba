package executor

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
)

const testPodIP = "10.88.9.5"

// newDockerHarness is a harness whose container driver is the fake Docker (pod networks,
// interactive exec, network rules).
func newDockerHarness(t *testing.T) (*harness, *fake.Docker) {
	d := fake.NewDocker(testPodIP)
	h := newHarness(t, func(c *Config) { c.Drivers["docker"] = d })
	h.docker = d.Driver
	return h, d
}

// bridgePod is a 2-container BRIDGE pod: a random, a fixed and an unmapped port, env
// copies, a host name, a cpu request and volumes.
func bridgePod(name string) *v4.TaskGroup {
	tg := containerTG(name, "web", "side")
	spec := &tg.Spec.Template.Spec
	spec.NetworkMode = "BRIDGE"
	web, side := &spec.Containers[0], &spec.Containers[1]
	web.Hostname = "webhost"
	web.Ports = []v4.Port{{Name: "http", ContainerPort: 8080, HostPort: 0, Protocol: "http"}}
	web.Env = []v4.EnvVar{{Name: "MYIP", Value: "$BCS_CONTAINER_IP"}, {Name: "PODID", Value: "$BCS_POD_ID"}}
	web.Resources = &v4.Resources{Requests: &v4.ResourceList{CPU: "0.5"}, Limits: &v4.ResourceList{CPU: "1", Memory: "64"}}
	side.Ports = []v4.Port{{Name: "metrics", ContainerPort: 9090, HostPort: -1}, {Name: "dns", ContainerPort: 53, HostPort: 39053, Protocol: "udp"}}
	side.Env = []v4.EnvVar{{Name: "MYIP", Value: "$HOST"}, {Name: "WEB", Value: "$PORT_http"}}
	side.Volumes = []v4.Volume{{Volume: v4.VolumeMount{HostPath: "/data/$BCS_POD_ID/x", MountPath: "/x", ReadOnly: true}}, {Volume: v4.VolumeMount{MountPath: "/scratch"}}}
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31005, Protocol: "http"}, {Name: "dns", HostPort: 39053, Protocol: "udp"}}
	return tg
}

func envOf(t driver.Task) map[string]string {
	out := map[string]string{}
	for _, kv := range t.Env {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

func TestBridgePodFirstContainerOwnsTheNetwork(t *testing.T) {
	h, d := newDockerHarness(t)
	h.run(bridgePod("web"))
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)

	web, _ := d.Task(id("web", "web"))
	side, _ := d.Task(id("web", "side"))
	wantBindings := []driver.PortBinding{
		{Name: "http", ContainerPort: 8080, HostPort: 31005, Protocol: "tcp"},
		{Name: "dns", ContainerPort: 53, HostPort: 39053, Protocol: "udp"},
	}
	if web.Setup.NetworkMode != "BRIDGE" || web.Setup.JoinTask != "" || !slices.Equal(web.Setup.PortBindings, wantBindings) || web.Setup.Hostname != "webhost" {
		t.Errorf("owner: mode %q join %q bindings %+v hostname %q", web.Setup.NetworkMode, web.Setup.JoinTask, web.Setup.PortBindings, web.Setup.Hostname)
	}
	if side.Setup.NetworkMode != "" || side.Setup.JoinTask != id("web", "web") || len(side.Setup.PortBindings) != 0 || side.Setup.Hostname != "" {
		t.Errorf("joiner: mode %q join %q bindings %+v hostname %q", side.Setup.NetworkMode, side.Setup.JoinTask, side.Setup.PortBindings, side.Setup.Hostname)
	}
	if web.CPURequest != 0.5 || web.CPULimit != 1 || web.MemoryLimit != 64 {
		t.Errorf("owner resources: request %v limit %v memory %v", web.CPURequest, web.CPULimit, web.MemoryLimit)
	}
	wantVols := []driver.Mount{{HostPath: "/data/web/x", ContainerPath: "/x", ReadOnly: true}, {HostPath: PodDir(h.dir, testNS, "web") + "/storage/scratch", ContainerPath: "/scratch"}}
	if !slices.Equal(side.Setup.Volumes, wantVols) {
		t.Errorf("volumes = %+v, want %+v", side.Setup.Volumes, wantVols)
	}
	if _, err := os.Stat(wantVols[1].HostPath); err != nil {
		t.Errorf("empty host path not created: %v", err)
	}

	ownerIP := st.Tasks[0].Info.IPAddress
	if !strings.HasPrefix(ownerIP, "172.17.0.") || st.Tasks[1].Info.IPAddress != ownerIP {
		t.Errorf("IPs = %q %q, want the owner's bridge IP on both", ownerIP, st.Tasks[1].Info.IPAddress)
	}
	we, se := envOf(web), envOf(side)
	for _, e := range []map[string]string{we, se} {
		if e["PORT_http"] != "31005" || e["PORT_metrics"] != "9090" || e["PORT_dns"] != "39053" || e["BCS_NODE_IP"] != testHostIP || e["BCS_POD_ID"] != "web" {
			t.Errorf("injected env = %v", e)
		}
	}
	// The owner starts before its IP is known: the node IP, as BCS's CNM code.
	if we["BCS_CONTAINER_IP"] != testHostIP || we["MYIP"] != testHostIP || we["PODID"] != "web" {
		t.Errorf("owner env = %v", we)
	}
	if se["BCS_CONTAINER_IP"] != ownerIP || se["HOST"] != ownerIP || se["MYIP"] != ownerIP || se["WEB"] != "31005" {
		t.Errorf("joiner env = %v, want the owner's IP %s", se, ownerIP)
	}
}

func TestHostAndUserModes(t *testing.T) {
	h, d := newDockerHarness(t)
	tg := containerTG("h", "a", "b")
	tg.Spec.Template.Spec.Containers[0].Ports = []v4.Port{{Name: "p", ContainerPort: 0}}
	tg.Spec.Template.Spec.Containers[1].Ports = []v4.Port{{Name: "q", ContainerPort: 8081}}
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "p", HostPort: 31001}, {Name: "q", HostPort: 8081}}
	h.run(tg)
	st := h.rec.waitPhase(t, "h", v4.StatusRunning)
	a, _ := d.Task(id("h", "a"))
	b, _ := d.Task(id("h", "b"))
	if a.Setup.NetworkMode != "HOST" || len(a.Setup.PortBindings) != 0 || b.Setup.JoinTask != id("h", "a") {
		t.Errorf("host mode: %q %+v join %q", a.Setup.NetworkMode, a.Setup.PortBindings, b.Setup.JoinTask)
	}
	if e := envOf(b); e["PORT_p"] != "31001" || e["PORT_q"] != "8081" || e["BCS_CONTAINER_IP"] != testHostIP {
		t.Errorf("host mode env = %v", e)
	}
	if st.Tasks[1].Info.IPAddress != testHostIP {
		t.Errorf("host mode IP = %q", st.Tasks[1].Info.IPAddress)
	}

	tg = containerTG("u", "a")
	tg.Spec.Template.Spec.NetworkMode = "USER"
	c := &tg.Spec.Template.Spec.Containers[0]
	c.Parameters = []v4.Parameter{{Key: "net", Value: "backend"}}
	c.Ports = []v4.Port{{Name: "p", ContainerPort: 7000}}
	h.run(tg)
	h.rec.waitPhase(t, "u", v4.StatusRunning)
	u, _ := d.Task(id("u", "a"))
	if u.Setup.NetworkMode != "backend" || len(u.Setup.PortBindings) != 0 || envOf(u)["PORT_p"] != "7000" {
		t.Errorf("user mode: %q %+v %v", u.Setup.NetworkMode, u.Setup.PortBindings, envOf(u))
	}
}

func TestJoinFailsWhenOwnerDied(t *testing.T) {
	h, d := newDockerHarness(t)
	d.SetStartHook(func(_ context.Context, task *driver.Task) error {
		if task.Name == "side" {
			d.Exit(id("web", "web"), 1) // the owner exits before the next one joins
		}
		return nil
	})
	h.run(bridgePod("web"))
	st := h.rec.waitPhase(t, "web", v4.StatusFailed)
	if !strings.Contains(st.Message, "start task side") || !strings.Contains(st.Message, "cannot join the network") {
		t.Errorf("message = %q", st.Message)
	}
	if d.Running(id("web", "web")) || d.Running(id("web", "side")) {
		t.Error("a container still runs")
	}
}

func TestSecondExitKillsFirst(t *testing.T) {
	h, d := newDockerHarness(t)
	h.run(bridgePod("web"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	d.Exit(id("web", "side"), 3)
	st := h.rec.waitPhase(t, "web", v4.StatusFailed)
	if grace, ok := d.Stopped(id("web", "web")); !ok || grace != time.Second {
		t.Errorf("owner stopped = %v %v", grace, ok)
	}
	if st.Tasks[1].Info.ExitCode != 3 || st.Tasks[1].Message != "exited with code 3" || st.Tasks[0].Status != v4.StatusFailed {
		t.Errorf("tasks = %+v", st.Tasks)
	}
}

func cniPod(name string) *v4.TaskGroup {
	tg := bridgePod(name)
	tg.Spec.Template.Spec.NetworkType = "cni"
	tg.Spec.Labels = map[string]string{"app": "web"}
	return tg
}

func TestCNIPodJoinsTheSandbox(t *testing.T) {
	h, d := newDockerHarness(t)
	h.run(cniPod("web"))
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)
	setups := d.Setups()
	podID := testNS + ".web"
	if len(setups) != 1 || setups[0].ID != podID || len(setups[0].Ports) != 2 || setups[0].Ports[0].HostPort != 31005 {
		t.Fatalf("setups = %+v", setups)
	}
	if l := setups[0].Labels; l["app"] != "web" || l[driver.LabelTaskGroup] != testNS+"/web" || l[driver.LabelTask] != "" {
		t.Errorf("sandbox labels = %v", l)
	}
	for i, n := range []string{"web", "side"} {
		tk, _ := d.Task(id("web", n))
		if tk.Setup.JoinTask != "sandbox-"+podID || tk.Setup.NetworkMode != "" || len(tk.Setup.PortBindings) != 0 {
			t.Errorf("%s: join %q mode %q bindings %v", n, tk.Setup.JoinTask, tk.Setup.NetworkMode, tk.Setup.PortBindings)
		}
		if e := envOf(tk); e["BCS_CONTAINER_IP"] != testPodIP || e["MYIP"] != testPodIP {
			t.Errorf("%s env = %v", n, e)
		}
		if st.Tasks[i].Info.IPAddress != testPodIP {
			t.Errorf("%s IP = %q", n, st.Tasks[i].Info.IPAddress)
		}
	}
	h.e.Kill(testNS, "web")
	if got := d.Teardowns(); !slices.Equal(got, []string{podID}) || d.Sandbox(podID) {
		t.Errorf("teardowns after kill = %v", got)
	}
	if err := h.e.Remove(context.Background(), testNS, "web"); err != nil {
		t.Fatal(err)
	}
	if got := d.Teardowns(); len(got) != 2 {
		t.Errorf("teardowns after remove = %v, want a second (idempotent) one", got)
	}
}

func TestCNIFailures(t *testing.T) {
	h, d := newDockerHarness(t)
	d.FailNextSetup(errors.New("plugin bridge: no IP left"))
	h.run(cniPod("web"))
	st := h.rec.waitPhase(t, "web", v4.StatusFailed)
	if !strings.Contains(st.Message, "set up the pod network (CNI): plugin bridge: no IP left") || len(d.Started()) != 0 {
		t.Errorf("message %q, started %v", st.Message, d.Started())
	}
	if got := d.Teardowns(); len(got) != 1 {
		t.Errorf("a failed setup is torn down: teardowns %v", got)
	}

	// A driver without pod networks.
	h2 := newHarness(t)
	h2.run(cniPod("web"))
	st = h2.rec.waitPhase(t, "web", v4.StatusFailed)
	if st.Message != ErrNoPodNetworks.Error() || len(h2.docker.Started()) != 0 {
		t.Errorf("message %q", st.Message)
	}
}

func TestCNIExitTearsDownAndRemoveOfUnknownPod(t *testing.T) {
	h, d := newDockerHarness(t)
	h.run(cniPod("web"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	d.Exit(id("web", "web"), 1)
	h.rec.waitPhase(t, "web", v4.StatusFailed)
	if got := d.Teardowns(); len(got) != 1 {
		t.Errorf("teardowns = %v", got)
	}
	// A pod deleted while the agent was away: unknown, its network is torn down anyway.
	if err := h.e.Remove(context.Background(), testNS, "gone"); err != nil {
		t.Fatal(err)
	}
	if got := d.Teardowns(); got[len(got)-1] != testNS+".gone" {
		t.Errorf("teardowns = %v", got)
	}
}

func TestAdoptCNIPod(t *testing.T) {
	h, d := newDockerHarness(t)
	tg := cniPod("web")
	p := h.e.newPod(tg)
	var states []driver.State
	for _, tp := range p.plan.tasks {
		st := d.Add(driver.Task{ID: tp.id, Name: tp.name, Labels: tp.labels})
		st.Info.IPAddress = testPodIP
		states = append(states, st)
	}
	if !h.e.Adopt(context.Background(), tg, states) {
		t.Fatal("not adopted")
	}
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)
	if st.Tasks[1].Info.IPAddress != testPodIP {
		t.Errorf("IP = %q", st.Tasks[1].Info.IPAddress)
	}
	h.e.Kill(testNS, "web")
	if got := d.Teardowns(); !slices.Equal(got, []string{testNS + ".web"}) {
		t.Errorf("teardowns = %v", got)
	}
}

// A container's ${bcs.*} variables are rendered once its ports are allocated, in its
// command, args and environment; its own ${...} are left to it.
func TestContainerBCSVariables(t *testing.T) {
	h, d := newDockerHarness(t)
	tg := bridgePod("web")
	tg.Spec.Index = 3
	web := &tg.Spec.Template.Spec.Containers[0]
	web.Command = "serve ${bcs.appname}"
	web.Args = []string{"--port=${bcs.ports.http}", "--at=${bcs.hostip}", "--home=${HOME}"}
	web.Env = append(web.Env, v4.EnvVar{Name: "POD_${bcs.instanceid}", Value: "${bcs.namespace}/${bcs.taskgroupname}/${bcs.taskgroupid}"})
	h.run(tg)
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	task, _ := d.Task(id("web", "web"))
	c := task.Container
	wantArgs := []string{"--port=31005", "--at=" + testHostIP, "--home=${HOME}"}
	if c.Command != "serve app" || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("command %q args %q, want %q %q", c.Command, c.Args, "serve app", wantArgs)
	}
	if v := envOf(task)["POD_3"]; v != testNS+"/app-3/web" {
		t.Errorf("env POD_3 = %q (env %v)", v, task.Env)
	}
}
