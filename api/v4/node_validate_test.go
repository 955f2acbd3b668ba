package v4

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func baseNode() *Node {
	n := &Node{
		TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindNode},
		Metadata: ObjectMeta{Name: "node-1.rack-a", Labels: map[string]string{"zone": "a"}},
		Spec: NodeSpec{
			IP:       "10.0.0.1",
			Capacity: NodeResources{CPU: 8, MemoryMB: 16384, DiskMB: 100000, Extended: map[string]float64{"nvidia.com/gpu": 2}},
			Attributes: NodeAttributes{
				Text:   map[string]string{"rack": "r1"},
				Scalar: map[string]float64{"cpus": 8},
				Set:    map[string][]string{"zone": {"a", "b"}},
			},
			Taints: []Taint{{Key: "dedicated", Value: "db", Effect: "noschedule"}},
			GPUs: []NodeGPU{
				{UUID: "GPU-a", Index: 0, Model: "A100", MemoryMiB: 40960, NUMANode: 0, Links: []GPULink{{UUID: "GPU-b", Level: GPULinkNVLink}}},
				{UUID: "GPU-b", Index: 1, Minor: 1, Model: "A100", MemoryMiB: 40960, NUMANode: -1},
			},
		},
	}
	DefaultNode(n)
	return n
}

func TestDefaultNode(t *testing.T) {
	n := baseNode()
	if n.Spec.Hostname != "node-1.rack-a" {
		t.Errorf("hostname %q, want the name", n.Spec.Hostname)
	}
	if a := n.Spec.Allocatable; a.CPU != 8 || a.MemoryMB != 16384 || a.DiskMB != 100000 || a.Extended["nvidia.com/gpu"] != 2 {
		t.Errorf("allocatable %+v, want the capacity", a)
	}
	if len(n.Spec.PortRanges) != 1 || n.Spec.PortRanges[0] != DefaultPortRange {
		t.Errorf("port ranges %v", n.Spec.PortRanges)
	}
	if n.Status.Phase != NodeNotReady || n.Spec.Taints[0].Effect != TaintNoSchedule {
		t.Errorf("phase %q, taint effect %q", n.Status.Phase, n.Spec.Taints[0].Effect)
	}
	if errs := ValidateNode(n); len(errs) != 0 {
		t.Fatalf("base node invalid: %v", errs)
	}
	// Set values stay; a second pass changes nothing.
	n.Spec.Allocatable.CPU = 6
	DefaultNode(n)
	if n.Spec.Allocatable.CPU != 6 {
		t.Errorf("allocatable cpu %g overwritten", n.Spec.Allocatable.CPU)
	}
}

func TestValidateNode(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(*Node)
		field  string
		msg    string
	}{
		{"empty name", func(n *Node) { n.Metadata.Name = "" }, "metadata.name", "required"},
		{"upper case name", func(n *Node) { n.Metadata.Name = "Node1" }, "metadata.name", "DNS host name"},
		{"name with underscore", func(n *Node) { n.Metadata.Name = "node_1" }, "metadata.name", "DNS host name"},
		{"name ending in dash", func(n *Node) { n.Metadata.Name = "node-" }, "metadata.name", "DNS host name"},
		{"empty label in name", func(n *Node) { n.Metadata.Name = "a..b" }, "metadata.name", "DNS host name"},
		{"long name", func(n *Node) { n.Metadata.Name = strings.Repeat("a.", 127) + "a" }, "metadata.name", "at most 253"},
		{"namespace", func(n *Node) { n.Metadata.Namespace = "ns-a" }, "metadata.namespace", "not namespaced"},
		{"bad label", func(n *Node) { n.Metadata.Labels["-x"] = "1" }, "metadata.labels.-x", "key must be"},
		{"hostname", func(n *Node) { n.Spec.Hostname = "Host 1" }, "spec.hostname", "DNS host name"},
		{"ip", func(n *Node) { n.Spec.IP = "10.0.0.300" }, "spec.ip", "IPv4 or IPv6"},
		{"negative cpu", func(n *Node) { n.Spec.Capacity.CPU = -1 }, "spec.capacity.cpu", "negative"},
		{"negative memory", func(n *Node) { n.Spec.Allocatable.MemoryMB = -1 }, "spec.allocatable.memoryMB", "negative"},
		{"negative extended", func(n *Node) { n.Spec.Allocatable.Extended["nvidia.com/gpu"] = -1 }, `spec.allocatable.extended["nvidia.com/gpu"]`, "negative"},
		{"port 0", func(n *Node) { n.Spec.PortRanges = []PortRange{{0, 10}} }, "spec.portRanges[0].begin", "1-65535"},
		{"port too high", func(n *Node) { n.Spec.PortRanges = []PortRange{{10, 70000}} }, "spec.portRanges[0].end", "1-65535"},
		{"reversed range", func(n *Node) { n.Spec.PortRanges = []PortRange{{20, 10}} }, "spec.portRanges[0]", "after end"},
		{"overlap", func(n *Node) { n.Spec.PortRanges = []PortRange{{31000, 32000}, {30000, 31000}} }, "spec.portRanges[0]", "overlaps spec.portRanges[1]"},
		{"empty text name", func(n *Node) { n.Spec.Attributes.Text[""] = "x" }, "spec.attributes.text", "empty"},
		{"empty scalar name", func(n *Node) { n.Spec.Attributes.Scalar[""] = 1 }, "spec.attributes.scalar", "empty"},
		{"empty set item", func(n *Node) { n.Spec.Attributes.Set["zone"] = []string{"a", ""} }, "spec.attributes.set.zone[1]", "empty"},
		{"taint without key", func(n *Node) { n.Spec.Taints[0].Key = "" }, "spec.taints[0].key", "required"},
		{"taint without value", func(n *Node) { n.Spec.Taints[0].Value = "" }, "spec.taints[0].value", "required"},
		{"taint effect", func(n *Node) { n.Spec.Taints[0].Effect = "NoExecute" }, "spec.taints[0].effect", `"NoSchedule"`},
		{"phase", func(n *Node) { n.Status.Phase = "Up" }, "status.phase", "must be one of"},
		{"gpu uuid", func(n *Node) { n.Spec.GPUs[0].UUID = "GPU a" }, "spec.gpus[0].uuid", "letters, digits"},
		{"gpu uuid twice", func(n *Node) { n.Spec.GPUs[1].UUID = "GPU-a" }, "spec.gpus[1].uuid", "also spec.gpus[0]"},
		{"gpu index twice", func(n *Node) { n.Spec.GPUs[1].Index = 0 }, "spec.gpus[1].index", "also the index of spec.gpus[0]"},
		{"gpu memory", func(n *Node) { n.Spec.GPUs[0].MemoryMiB = 0 }, "spec.gpus[0].memoryMiB", "must be 1-"},
		{"gpu numa", func(n *Node) { n.Spec.GPUs[0].NUMANode = -2 }, "spec.gpus[0].numaNode", "-1 (unknown)"},
		{"gpu link to nothing", func(n *Node) { n.Spec.GPUs[0].Links[0].UUID = "GPU-z" }, "spec.gpus[0].links[0].uuid", "another card of this node"},
		{"gpu link to itself", func(n *Node) { n.Spec.GPUs[0].Links[0].UUID = "GPU-a" }, "spec.gpus[0].links[0].uuid", "another card of this node"},
		{"gpu link level", func(n *Node) { n.Spec.GPUs[0].Links[0].Level = "pigeon" }, "spec.gpus[0].links[0].level", "must be one of"},
		{"too many gpus", func(n *Node) { n.Spec.GPUs = make([]NodeGPU, MaxGPUsPerNode+1) }, "spec.gpus", "at most 64 cards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := baseNode()
			tt.break_(n)
			errs := ValidateNode(n)
			for _, e := range errs {
				if e.Field == tt.field && strings.Contains(e.Message, tt.msg) {
					return
				}
			}
			t.Errorf("want %s: ...%s..., got %v", tt.field, tt.msg, errs)
		})
	}
}

func TestValidateTaskGroup(t *testing.T) {
	base := func() *TaskGroup {
		tg := &TaskGroup{
			TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindTaskGroup},
			Metadata: ObjectMeta{Name: "0.web.ns-a.berth.1700000000000000000", Namespace: "ns-a"},
			Spec: TaskGroupSpec{Owner: OwnerRef{Kind: KindProcess, Name: "web"}, Node: "node-1",
				Ports: []AllocatedPort{{Name: "http", HostPort: 31000}},
				GPUs:  []TaskGPU{{Task: "main", UUID: "GPU-a", Cores: 30, MemoryMiB: 4096}}},
		}
		Default(tg)
		return tg
	}
	if errs := Validate(base()); len(errs) != 0 {
		t.Fatalf("base task group invalid: %v", errs)
	}
	tests := []struct {
		name   string
		break_ func(*TaskGroup)
		field  string
	}{
		{"index mismatch", func(tg *TaskGroup) { tg.Spec.Index = 1 }, "metadata.name"},
		{"slash in name", func(tg *TaskGroup) { tg.Metadata.Name = "0.web/x" }, "metadata.name"},
		{"no owner kind", func(tg *TaskGroup) { tg.Spec.Owner.Kind = "" }, "spec.owner.kind"},
		{"owner is a service", func(tg *TaskGroup) { tg.Spec.Owner.Kind = KindService }, "spec.owner.kind"},
		{"no owner name", func(tg *TaskGroup) { tg.Spec.Owner.Name = "" }, "spec.owner.name"},
		{"negative index", func(tg *TaskGroup) { tg.Spec.Index = -1; tg.Metadata.Name = "-1.web" }, "spec.index"},
		{"no node", func(tg *TaskGroup) { tg.Spec.Node = "" }, "spec.node"},
		{"port", func(tg *TaskGroup) { tg.Spec.Ports[0].HostPort = 0 }, "spec.ports[0].hostPort"},
		{"gpu task", func(tg *TaskGroup) { tg.Spec.GPUs[0].Task = "" }, "spec.gpus[0].task"},
		{"gpu cores", func(tg *TaskGroup) { tg.Spec.GPUs[0].Cores = 150 }, "spec.gpus[0].cores"},
		{"gpu uuid", func(tg *TaskGroup) { tg.Spec.GPUs[0].UUID = "" }, "spec.gpus[0].uuid"},
		{"unknown phase", func(tg *TaskGroup) { tg.Status.Phase = "Exploded" }, "status.phase"},
		{"long message", func(tg *TaskGroup) { tg.Status.Message = strings.Repeat("x", maxStatusMessageLen+1) }, "status.message"},
		{"too many tasks", func(tg *TaskGroup) { tg.Status.Tasks = make([]TaskStatus, maxStatusTasks+1) }, "status.tasks"},
		{"long health message", func(tg *TaskGroup) {
			tg.Status.Tasks = []TaskStatus{{Name: "t", HealthMessage: strings.Repeat("é", maxStatusMessageLen)}}
		}, "status.tasks[0].healthMessage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := base()
			tt.break_(tg)
			for _, e := range Validate(tg) {
				if e.Field == tt.field {
					return
				}
			}
			t.Errorf("want an error on %s, got %v", tt.field, Validate(tg))
		})
	}
}

func TestClampStatus(t *testing.T) {
	st := TaskGroupStatus{Message: strings.Repeat("é", maxStatusMessageLen),
		Tasks: []TaskStatus{{Message: "short", HealthMessage: strings.Repeat("x", 3*maxStatusMessageLen)}}}
	ClampStatus(&st)
	var errs FieldErrors
	validateTaskGroupStatus(&st, &errs)
	if len(errs) != 0 {
		t.Fatalf("clamped status still invalid: %v", errs)
	}
	if !utf8.ValidString(st.Message) || !strings.HasSuffix(st.Message, "…") || st.Tasks[0].Message != "short" {
		t.Fatalf("clamped: message %d bytes valid=%v, task message %q", len(st.Message), utf8.ValidString(st.Message), st.Tasks[0].Message)
	}
}

func TestNodeCannotBeParsed(t *testing.T) {
	_, err := Parse([]byte(`{"apiVersion":"v4","kind":"node","metadata":{"name":"n1"}}`))
	if err == nil || !strings.Contains(err.Error(), "cannot be applied") {
		t.Fatalf("Parse of a node: %v", err)
	}
	if KindNode.Namespaced() || !KindTaskGroup.Namespaced() {
		t.Fatal("nodes are cluster-scoped, task groups namespaced")
	}
}
