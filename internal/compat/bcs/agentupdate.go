package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS's value types of an attribute in a setting update (Mesos's, offset by 100).
const (
	valueTypeScalar = 101
	valueTypeText   = 103
)

// bcsAgentSettingUpdate is BCS's BcsClusterAgentSettingUpdate: one attribute set on the
// nodes with those IPs (`bcs-client as -u --key K --string V` or `--scalar V`).
type bcsAgentSettingUpdate struct {
	IPs       []string   `json:"ips"`
	Name      string     `json:"name"`
	ValueType int        `json:"valuetype"`
	Text      *bcsText   `json:"text"`
	Scalar    *bcsScalar `json:"scalar"`
}

// maxUpdateIPs bounds the nodes one update names: each is a /v1 patch.
const maxUpdateIPs = 1000

// updateAgents serves POST /agentsettings/update: the attribute is set on each node, its
// other attributes kept, as BCS set it in each node's setting.
func (h *Handler) updateAgents(w http.ResponseWriter, r *http.Request) {
	var u bcsAgentSettingUpdate
	if err := json.Unmarshal(v1call.Body(r), &u); err != nil {
		writeFailure(w, failure{code: CodeJSONDecode, message: "the body is not an agent setting update: " + err.Error()})
		return
	}
	attr, f := u.attribute()
	if f != nil {
		writeFailure(w, *f)
		return
	}
	nodes, _, f := h.nodes(r)
	if f == nil {
		nodes, f = indexByIP(nodes).pick(strings.Join(u.IPs, ","))
	}
	if f != nil {
		writeFailure(w, *f)
		return
	}
	for _, n := range nodes {
		if f := h.patchNode(r, n, map[string]any{"attributes": attr}); f != nil {
			writeFailure(w, *f)
			return
		}
	}
	writeSuccess(w, nil, nil)
}

// attribute checks the update and makes the merge patch of the nodes' attributes.
func (u bcsAgentSettingUpdate) attribute() (map[string]any, *failure) {
	bad := func(format string, args ...any) (map[string]any, *failure) {
		return nil, &failure{code: CodeBadRequestData, message: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(u.IPs) == 0:
		return bad("ips: required (the nodes' IPs)")
	case len(u.IPs) > maxUpdateIPs:
		return bad("ips: %d IPs, at most %d", len(u.IPs), maxUpdateIPs)
	case u.Name == "":
		return bad("name: required (the attribute's name)")
	}
	for i, ip := range u.IPs {
		if strings.TrimSpace(ip) == "" || strings.Contains(ip, ",") {
			return bad("ips[%d]: %q is not an IP", i, ip)
		}
	}
	switch u.ValueType {
	case valueTypeText:
		if u.Text == nil {
			return bad("text: required for valuetype %d (text)", valueTypeText)
		}
		return map[string]any{"text": map[string]any{u.Name: u.Text.Value}}, nil
	case valueTypeScalar:
		if u.Scalar == nil {
			return bad("scalar: required for valuetype %d (scalar)", valueTypeScalar)
		}
		return map[string]any{"scalar": map[string]any{u.Name: u.Scalar.Value}}, nil
	}
	return bad("valuetype: %d, want %d (text) or %d (scalar)", u.ValueType, valueTypeText, valueTypeScalar)
}
