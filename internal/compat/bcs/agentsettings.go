package bcs

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS kept per-node settings by the node's IP ("agent settings"): attributes, disabling,
// NoSchedule taints. In berth they are the node's own spec, so these routes read and
// patch nodes, found by their IP. /cluster/resources sums the nodes' capacity and what
// their instances reserved.

func (h *Handler) nodeRoutes() {
	h.mux.HandleFunc("GET /agentsettings", h.getAgentSettings)
	h.mux.HandleFunc("POST /agentsettings", h.patchBySettings(attributesPatch))
	h.mux.HandleFunc("POST /agentsettings/{action}", h.enableAgents)
	h.mux.HandleFunc("PUT /agentsettings/taint", h.patchBySettings(taintsPatch))
	h.mux.HandleFunc("GET /cluster/resources", h.clusterResources)
	h.mux.HandleFunc("GET /cluster/current/offers", h.currentOffers)
}

// bcsText and bcsScalar are Mesos's attribute values.
type bcsText struct {
	Value string `json:"value"`
}

type bcsScalar struct {
	Value float64 `json:"value"`
}

// bcsAgentSetting is BCS's BcsClusterAgentSetting.
type bcsAgentSetting struct {
	InnerIP           string               `json:"innerIP"`
	Disabled          bool                 `json:"disabled"`
	AttrStrings       map[string]bcsText   `json:"strings"`
	AttrScalars       map[string]bcsScalar `json:"scalars"`
	NoSchedule        map[string]string    `json:"noSchedule"`
	Pods              []string             `json:"pods"`
	ExtendedResources map[string]any       `json:"ExtendedResources"`
}

// nodes reads every node and the live task groups on each.
func (h *Handler) nodes(r *http.Request) ([]*v4.Node, map[string][]*v4.TaskGroup, *failure) {
	nodes, a := v1call.List[*v4.Node](h.v1, r, "/v1/nodes")
	if a == nil {
		var tgs []*v4.TaskGroup
		if tgs, a = v1call.List[*v4.TaskGroup](h.v1, r, "/v1/taskgroups"); a == nil {
			on := map[string][]*v4.TaskGroup{}
			for _, tg := range tgs {
				if !v4.Terminal(tg.Status.Phase) {
					on[tg.Spec.Node] = append(on[tg.Spec.Node], tg)
				}
			}
			return nodes, on, nil
		}
	}
	f := failureOf(*a, false)
	return nil, nil, &f
}

// byIP picks the nodes of the ?ips= list (every node without one); an unknown IP fails.
func byIP(nodes []*v4.Node, ips string) ([]*v4.Node, *failure) {
	if ips == "" {
		return nodes, nil
	}
	return indexByIP(nodes).pick(ips)
}

// ipIndex finds nodes by IP. The IP lists are the caller's, of any length: each IP is a
// lookup, not a scan of the nodes.
type ipIndex map[string]*v4.Node

func indexByIP(nodes []*v4.Node) ipIndex {
	index := make(ipIndex, len(nodes))
	for _, n := range nodes {
		index[n.Spec.IP] = n
	}
	return index
}

// pick returns the nodes of a comma list of IPs; an unknown IP fails.
func (index ipIndex) pick(ips string) ([]*v4.Node, *failure) {
	var out []*v4.Node
	for _, ip := range strings.Split(ips, ",") {
		n, ok := index[strings.TrimSpace(ip)]
		if !ok {
			return nil, &failure{code: CodeNotFound, message: fmt.Sprintf("no node has IP %q", ip)}
		}
		out = append(out, n)
	}
	return out, nil
}

func settingOf(n *v4.Node, tgs []*v4.TaskGroup) bcsAgentSetting {
	s := bcsAgentSetting{InnerIP: n.Spec.IP, Disabled: n.Spec.Disabled, AttrStrings: map[string]bcsText{},
		AttrScalars: map[string]bcsScalar{}, NoSchedule: map[string]string{}, Pods: []string{}, ExtendedResources: map[string]any{}}
	for k, v := range n.Spec.Attributes.Text {
		s.AttrStrings[k] = bcsText{v}
	}
	for k, v := range n.Spec.Attributes.Scalar {
		s.AttrScalars[k] = bcsScalar{v}
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == v4.TaintNoSchedule {
			s.NoSchedule[t.Key] = t.Value
		}
	}
	for _, tg := range tgs {
		s.Pods = append(s.Pods, tg.Metadata.Name)
	}
	return s
}

func (h *Handler) getAgentSettings(w http.ResponseWriter, r *http.Request) {
	nodes, on, f := h.nodes(r)
	if f == nil {
		nodes, f = byIP(nodes, r.URL.Query().Get("ips"))
	}
	if f != nil {
		writeFailure(w, *f)
		return
	}
	out := []bcsAgentSetting{}
	for _, n := range nodes {
		out = append(out, settingOf(n, on[n.Metadata.Name]))
	}
	writeSuccess(w, out, nil)
}

// readSettings reads a body of settings and finds each one's node.
func (h *Handler) readSettings(r *http.Request) ([]bcsAgentSetting, []*v4.Node, *failure) {
	var settings []bcsAgentSetting
	if err := json.Unmarshal(v1call.Body(r), &settings); err != nil {
		return nil, nil, &failure{code: CodeJSONDecode, message: "the body is not a list of agent settings: " + err.Error()}
	}
	nodes, _, f := h.nodes(r)
	if f != nil {
		return nil, nil, f
	}
	index := indexByIP(nodes)
	var targets []*v4.Node
	for i, s := range settings {
		if s.InnerIP == "" {
			return nil, nil, &failure{code: CodeBadRequestData, message: fmt.Sprintf("[%d].innerIP: required", i)}
		}
		picked, f := index.pick(s.InnerIP)
		if f != nil {
			return nil, nil, f
		}
		targets = append(targets, picked[0])
	}
	return settings, targets, nil
}

// patchNode merge-patches one node through /v1.
func (h *Handler) patchNode(r *http.Request, n *v4.Node, spec map[string]any) *failure {
	body, _ := json.Marshal(map[string]any{"spec": spec})
	if a := h.v1.Call(r, http.MethodPatch, v1call.Path("nodes", n.Metadata.Name), nil, body); !a.OK() {
		f := failureOf(a, false)
		return &f
	}
	return nil
}

// patchBySettings serves a body of agent settings: each setting's node is merge-patched
// with the spec patch makes of it, in order, until one fails.
func (h *Handler) patchBySettings(patch func(s bcsAgentSetting, n *v4.Node) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		settings, nodes, f := h.readSettings(r)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		for i, s := range settings {
			if f := h.patchNode(r, nodes[i], patch(s, nodes[i])); f != nil {
				writeFailure(w, *f)
				return
			}
		}
		writeSuccess(w, nil, nil)
	}
}

// attributesPatch replaces the node's text and scalar attributes, as BCS replaced a
// setting's strings and scalars (its other fields kept).
func attributesPatch(s bcsAgentSetting, n *v4.Node) map[string]any {
	text, scalar := map[string]any{}, map[string]any{}
	for k := range n.Spec.Attributes.Text {
		text[k] = nil // a merge patch removes what the new map lacks
	}
	for k := range n.Spec.Attributes.Scalar {
		scalar[k] = nil
	}
	for k, v := range s.AttrStrings {
		text[k] = v.Value
	}
	for k, v := range s.AttrScalars {
		scalar[k] = v.Value
	}
	return map[string]any{"attributes": map[string]any{"text": text, "scalar": scalar}}
}

// enableAgents serves /agentsettings/enable and /disable?ips=, and /update (agentupdate.go).
func (h *Handler) enableAgents(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if action == "update" {
		h.updateAgents(w, r)
		return
	}
	if action != "enable" && action != "disable" {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound,
			message: fmt.Sprintf("no agent settings action %q (enable, disable or update; delete is not served)", action)})
		return
	}
	nodes, _, f := h.nodes(r)
	if f == nil && r.URL.Query().Get("ips") != "" {
		nodes, f = byIP(nodes, r.URL.Query().Get("ips"))
	} else if f == nil {
		nodes = nil // BCS: no ips, nothing changes
	}
	if f != nil {
		writeFailure(w, *f)
		return
	}
	for _, n := range nodes {
		if f := h.patchNode(r, n, map[string]any{"disabled": action == "disable"}); f != nil {
			writeFailure(w, *f)
			return
		}
	}
	writeSuccess(w, nil, nil)
}

// taintsPatch replaces the node's NoSchedule taints by the setting's noSchedule map.
func taintsPatch(s bcsAgentSetting, n *v4.Node) map[string]any {
	taints := []v4.Taint{}
	for _, t := range n.Spec.Taints {
		if t.Effect != v4.TaintNoSchedule {
			taints = append(taints, t)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.NoSchedule)) {
		taints = append(taints, v4.Taint{Key: k, Value: s.NoSchedule[k], Effect: v4.TaintNoSchedule})
	}
	return map[string]any{"taints": taints}
}

// bcsClusterResource is BCS's BcsClusterResource: cores and MB.
type bcsClusterResource struct {
	DiskTotal float64        `json:"disktotal"`
	MemTotal  float64        `json:"memtotal"`
	CPUTotal  float64        `json:"cputotal"`
	DiskUsed  float64        `json:"diskused"`
	MemUsed   float64        `json:"memused"`
	CPUUsed   float64        `json:"cpuused"`
	Agents    []bcsAgentInfo `json:"agents"`
}

type bcsAgentInfo struct {
	HostName       string         `json:"hostname"`
	IP             string         `json:"ip"`
	DiskTotal      float64        `json:"disktotal"`
	MemTotal       float64        `json:"memtotal"`
	CPUTotal       float64        `json:"cputotal"`
	DiskUsed       float64        `json:"diskused"`
	MemUsed        float64        `json:"memused"`
	CPUUsed        float64        `json:"cpuused"`
	Disabled       bool           `json:"disabled"`
	HostAttributes []bcsAttribute `json:"host_attributes"`
	Attributes     []bcsAttribute `json:"attributes"`
	RegisteredTime int64          `json:"registered_time"`
	// ReRegisteredTime is when the agent last registered again (ns); berth records
	// none, so 0, as BCS answered for an agent that never did.
	ReRegisteredTime int64 `json:"reregistered_time"`
}

// bcsAttribute is a Mesos attribute: type 101 scalar, 103 text, 104 set in the agent
// settings; an offer's carry Mesos's own numbers (offers.go).
type bcsAttribute struct {
	Name   string     `json:"name"`
	Type   int        `json:"type"`
	Scalar *bcsScalar `json:"scalar,omitempty"`
	Text   *bcsText   `json:"text,omitempty"`
	Set    *bcsSet    `json:"set,omitempty"`
}

type bcsSet struct {
	Item []string `json:"item"`
}

func (h *Handler) clusterResources(w http.ResponseWriter, r *http.Request) {
	nodes, on, f := h.nodes(r)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	out := bcsClusterResource{Agents: []bcsAgentInfo{}}
	for _, n := range nodes {
		c := n.Spec.Capacity
		// BCS listed the agent's own attributes twice, as host_attributes and attributes.
		attrs := attributesOf(n.Spec.Attributes)
		a := bcsAgentInfo{HostName: n.Spec.Hostname, IP: n.Spec.IP, CPUTotal: c.CPU, MemTotal: c.MemoryMB, DiskTotal: c.DiskMB,
			Disabled: n.Spec.Disabled, HostAttributes: attrs, Attributes: attrs, RegisteredTime: n.Metadata.CreationTimestamp.UnixNano()}
		for _, tg := range on[n.Metadata.Name] {
			a.CPUUsed += tg.Spec.Resources.CPU
			a.MemUsed += tg.Spec.Resources.MemoryMB
			a.DiskUsed += tg.Spec.Resources.DiskMB
		}
		out.CPUTotal, out.MemTotal, out.DiskTotal = out.CPUTotal+a.CPUTotal, out.MemTotal+a.MemTotal, out.DiskTotal+a.DiskTotal
		out.CPUUsed, out.MemUsed, out.DiskUsed = out.CPUUsed+a.CPUUsed, out.MemUsed+a.MemUsed, out.DiskUsed+a.DiskUsed
		out.Agents = append(out.Agents, a)
	}
	writeSuccess(w, out, nil)
}

func attributesOf(at v4.NodeAttributes) []bcsAttribute {
	out := []bcsAttribute{}
	for _, k := range slices.Sorted(maps.Keys(at.Text)) {
		out = append(out, bcsAttribute{Name: k, Type: 103, Text: &bcsText{at.Text[k]}})
	}
	for _, k := range slices.Sorted(maps.Keys(at.Scalar)) {
		out = append(out, bcsAttribute{Name: k, Type: 101, Scalar: &bcsScalar{at.Scalar[k]}})
	}
	for _, k := range slices.Sorted(maps.Keys(at.Set)) {
		out = append(out, bcsAttribute{Name: k, Type: 104, Set: &bcsSet{at.Set[k]}})
	}
	return out
}
