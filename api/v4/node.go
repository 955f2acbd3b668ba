package v4

import "time"

// KindNode names cluster machines. Nodes are not namespaced and are not part of the
// kinds registry of namespaced specs: agents register them and users patch them.
const KindNode Kind = "node"

// Node is one machine that runs task groups, as its agent registered it plus what
// operators set (labels, attributes, taints, disabled).
type Node struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     NodeSpec   `json:"spec"`
	Status   NodeStatus `json:"status"`
}

// GetMeta returns the object's metadata.
func (n *Node) GetMeta() *ObjectMeta { return &n.Metadata }

// NodeSpec is what a node offers and how it may be used.
type NodeSpec struct {
	Hostname string `json:"hostname"`
	IP       string `json:"ip"`
	// Capacity is the machine; Allocatable is what berth may hand out (capacity minus what
	// the system keeps). Scheduling uses Allocatable.
	Capacity    NodeResources `json:"capacity"`
	Allocatable NodeResources `json:"allocatable"`
	// PortRanges are the host ports given to random (0) ports; default 31000-32000.
	PortRanges []PortRange `json:"portRanges,omitempty"`
	// Attributes are what constraints match on (BCS agent attributes); "hostname" is
	// built in. A name found in several maps is looked up text first, then scalar, then set.
	Attributes NodeAttributes `json:"attributes,omitzero"`
	Taints     []Taint        `json:"taints,omitempty"`
	// Disabled nodes take no new task groups; what runs there stays.
	Disabled bool `json:"disabled,omitempty"`
	// GPUs are the node's cards as its agent fingerprinted them (docs/gpus.md); the
	// scheduler places GPU requests on them card by card.
	GPUs []NodeGPU `json:"gpus,omitempty"`
}

// NodeResources are amounts of cpu (cores), memory and disk (MB) and counted extended
// resources (for example "nvidia.com/gpu" or a device plugin's resource).
type NodeResources struct {
	CPU      float64            `json:"cpu"`
	MemoryMB float64            `json:"memoryMB"`
	DiskMB   float64            `json:"diskMB"`
	Extended map[string]float64 `json:"extended,omitempty"`
}

// PortRange is an inclusive range of host ports.
type PortRange struct {
	Begin int `json:"begin"`
	End   int `json:"end"`
}

// DefaultPortRange is the Mesos agent's default ports resource, which BCS relied on.
var DefaultPortRange = PortRange{Begin: 31000, End: 32000}

// NodeAttributes are typed node attributes (BCS types 1 scalar, 3 text, 4 set).
type NodeAttributes struct {
	Text   map[string]string   `json:"text,omitempty"`
	Scalar map[string]float64  `json:"scalar,omitempty"`
	Set    map[string][]string `json:"set,omitempty"`
}

// Taint effects. NoSchedule keeps task groups away unless they tolerate the taint;
// PreferNoSchedule only ranks the node after every node without such a taint, so that
// it still takes task groups no other node fits (a soft constraint).
const (
	TaintNoSchedule       = "NoSchedule"
	TaintPreferNoSchedule = "PreferNoSchedule"
)

// Taint marks a node; a TOLERATION constraint entry {name: key, text: value} tolerates it.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Node phases.
const (
	NodeReady    = "Ready"
	NodeNotReady = "NotReady"
	NodeLost     = "Lost"
)

// NodeStatus is what the agent and the node-lifecycle controller report.
type NodeStatus struct {
	Phase         string    `json:"phase,omitempty"`
	LastHeartbeat time.Time `json:"lastHeartbeat,omitzero"`
	AgentVersion  string    `json:"agentVersion,omitempty"`
	// AgentAddress is where the agent serves logs and actions to the server
	// ("host:port", authenticated with the join token).
	AgentAddress string `json:"agentAddress,omitempty"`
	// BusyPorts are host ports of the node's port ranges (and ports a start found taken)
	// that programs other than berth's tasks hold, as its agent last saw them, lowest
	// first, at most MaxBusyPorts: the scheduler gives none of them out.
	BusyPorts []BusyPort `json:"busyPorts,omitempty"`
	// CSIPlugins are the CSI plugins the node's agent found in its plugin directory
	// (docs/volumes.md), at most MaxCSIPlugins.
	CSIPlugins []CSIPlugin `json:"csiPlugins,omitempty"`
	// Revocable is what the node's agent last measured for lending (docs/policy.md,
	// "Revocable capacity"); nil: the node lends nothing.
	Revocable *RevocableStatus `json:"revocable,omitempty"`
}
