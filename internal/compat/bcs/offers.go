package bcs

import (
	"maps"
	"net/http"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// BCS's scheduler kept a pool of Mesos offers, at most one per agent: what each agent had
// free, with its attributes, and `bcs-client offer` listed them (GET /cluster/current/offers).
// berth has no offers, but what a user reads offers for is each schedulable node's free
// resources, which berth knows: allocatable minus what its live task groups reserve (the
// executor's overhead included, as the scheduler counts it), and the host ports of its
// ranges no task group or other program holds. So the route answers one offer per Ready,
// enabled node, in the shape of BCS's OfferWithDelta (a Mesos v1 Offer and BCS's delta).

// Mesos's Value.Type numbers, as a Mesos Offer's resources and attributes carry them
// (BCS's own agent settings use 101-104 instead).
// mesosText (3) is in shapes_task.go.
const (
	mesosScalar    = 0
	mesosRangeType = 1
	mesosSet       = 2
)

// mesosOffer is BCS's OfferWithDelta: Mesos's Offer (its JSON keys) and BCS's
// deltaResource, the resources in-place updates took off the agent (none in berth). Its
// attributes have the keys of the agent settings' (bcsAttribute), with Mesos's type numbers.
type mesosOffer struct {
	ID            mesosID         `json:"id"`
	FrameworkID   mesosID         `json:"framework_id"`
	AgentID       mesosID         `json:"agent_id"`
	Hostname      string          `json:"hostname"`
	Resources     []mesosResource `json:"resources"`
	Attributes    []bcsAttribute  `json:"attributes"`
	DeltaResource bcsResource     `json:"deltaResource"`
}

type mesosID struct {
	Value string `json:"value"`
}

type mesosResource struct {
	Name   string       `json:"name"`
	Type   int          `json:"type"`
	Scalar *bcsScalar   `json:"scalar,omitempty"`
	Ranges *mesosRanges `json:"ranges,omitempty"`
	Role   string       `json:"role"`
}

type mesosRanges struct {
	Range []v4.PortRange `json:"range"`
}

// offerFramework names the framework in every offer: BCS's scheduler registered as one
// Mesos framework; berth's scheduler is the one that would take these resources.
const offerFramework = "berth"

// currentOffers serves GET /cluster/current/offers. It reads nodes and every task group
// through /v1, so the caller needs what /cluster/resources needs: read on nodes and on
// task groups in every namespace (a token limited to namespaces gets /v1's 403).
func (h *Handler) currentOffers(w http.ResponseWriter, r *http.Request) {
	nodes, on, f := h.nodes(r)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	out := []mesosOffer{}
	for _, n := range nodes {
		if n.Status.Phase != v4.NodeReady || n.Spec.Disabled {
			continue // BCS's pool declined the offers of disabled and lost agents
		}
		out = append(out, offerOf(n, on[n.Metadata.Name]))
	}
	writeSuccess(w, out, nil)
}

// offerOf is a node's free resources as one Mesos offer.
func offerOf(n *v4.Node, tgs []*v4.TaskGroup) mesosOffer {
	a := n.Spec.Allocatable
	free := bcsResource{Cpus: a.CPU, Mem: a.MemoryMB, Disk: a.DiskMB}
	ext := maps.Clone(a.Extended)
	for _, tg := range tgs {
		res := tg.Spec.Resources
		free.Cpus, free.Mem, free.Disk = free.Cpus-res.CPU, free.Mem-res.MemoryMB, free.Disk-res.DiskMB
		for k, v := range res.Extended {
			if _, ok := ext[k]; ok {
				ext[k] -= v
			}
		}
	}
	scalar := func(name string, v float64) mesosResource {
		return mesosResource{Name: name, Type: mesosScalar, Scalar: &bcsScalar{max(v, 0)}, Role: "*"}
	}
	res := []mesosResource{scalar("cpus", free.Cpus), scalar("mem", free.Mem), scalar("disk", free.Disk),
		{Name: "ports", Type: mesosRangeType, Ranges: &mesosRanges{Range: freePorts(n, tgs)}, Role: "*"}}
	for _, k := range slices.Sorted(maps.Keys(ext)) {
		res = append(res, scalar(k, ext[k]))
	}
	return mesosOffer{
		ID: mesosID{n.Metadata.Name}, FrameworkID: mesosID{offerFramework}, AgentID: mesosID{n.Metadata.Name},
		Hostname: n.Spec.Hostname, Resources: res, Attributes: offerAttributes(n), DeltaResource: bcsResource{},
	}
}

// offerAttributes are the node's attributes as BCS's offer pool set them: InnerIP first
// (`bcs-client offer --ip` looks at the first attribute only), then the text, scalar and
// set attributes, and the NoSchedule taints as the set attribute NoSchedule of "k=v".
func offerAttributes(n *v4.Node) []bcsAttribute {
	at := n.Spec.Attributes
	out := []bcsAttribute{{Name: "InnerIP", Type: mesosText, Text: &bcsText{n.Spec.IP}}}
	for _, k := range slices.Sorted(maps.Keys(at.Text)) {
		if k != "InnerIP" {
			out = append(out, bcsAttribute{Name: k, Type: mesosText, Text: &bcsText{at.Text[k]}})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(at.Scalar)) {
		out = append(out, bcsAttribute{Name: k, Type: mesosScalar, Scalar: &bcsScalar{at.Scalar[k]}})
	}
	for _, k := range slices.Sorted(maps.Keys(at.Set)) {
		out = append(out, bcsAttribute{Name: k, Type: mesosSet, Set: &bcsSet{slices.Clone(at.Set[k])}})
	}
	var taints []string
	for _, t := range n.Spec.Taints {
		if t.Effect == v4.TaintNoSchedule {
			taints = append(taints, t.Key+"="+t.Value)
		}
	}
	if len(taints) > 0 {
		out = append(out, bcsAttribute{Name: "NoSchedule", Type: mesosSet, Set: &bcsSet{taints}})
	}
	return out
}

// freePorts are the node's port ranges less the host ports its live task groups hold and
// those its agent saw other programs hold, as ranges (Mesos's ports resource).
func freePorts(n *v4.Node, tgs []*v4.TaskGroup) []v4.PortRange {
	held := map[int]bool{}
	for _, tg := range tgs {
		for _, p := range tg.Spec.Ports {
			held[p.HostPort] = true
		}
	}
	for _, p := range n.Status.BusyPorts {
		held[p.Port] = true
	}
	ranges := n.Spec.PortRanges
	if len(ranges) == 0 {
		ranges = []v4.PortRange{v4.DefaultPortRange}
	}
	out := []v4.PortRange{}
	for _, pr := range ranges {
		// Each range is cut at the held ports inside it: a walk over those, not over
		// the range's ports.
		var inside []int
		for p := range held {
			if p >= pr.Begin && p <= pr.End {
				inside = append(inside, p)
			}
		}
		slices.Sort(inside)
		begin := pr.Begin
		for _, p := range inside {
			if p > begin {
				out = append(out, v4.PortRange{Begin: begin, End: p - 1})
			}
			begin = p + 1
		}
		if begin <= pr.End {
			out = append(out, v4.PortRange{Begin: begin, End: pr.End})
		}
	}
	return out
}
