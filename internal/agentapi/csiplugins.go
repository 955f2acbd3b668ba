package agentapi

import (
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// handleAgentCSIPlugins sets the node's status.csiPlugins (PUT
// /v1/agent/nodes/{name}/csiplugins): the CSI plugins its agent found in its plugin
// directory (docs/volumes.md, "Plugins"), which the scheduler places csi volumes by and
// the volume controller calls. The agent sends the whole list when it changed, so the
// node is written only then. What a plugin says reaches the store through here: the
// list is checked field by field (names, sizes, counts, topology) first.
func (a *API) handleAgentCSIPlugins(w http.ResponseWriter, r *http.Request) error {
	return nodeList[v4.AgentCSIPlugins, v4.CSIPlugin]{
		what:     "CSI plugins",
		items:    func(b *v4.AgentCSIPlugins) []v4.CSIPlugin { return b.Plugins },
		validate: v4.ValidateCSIPlugins,
		field:    func(s *v4.NodeStatus) *[]v4.CSIPlugin { return &s.CSIPlugins },
	}.put(a, w, r)
}
