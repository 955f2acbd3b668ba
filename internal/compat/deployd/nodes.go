package deployd

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// Node is deployd's view of a node (Swarm's): CPUs in cores, memory in bytes; "used" is
// what its instances reserved.
type Node struct {
	Name       string
	Address    string
	Containers int
	CPUs       int
	UsedCPUs   float64
	Memory     int64
	UsedMemory int64
}

func (h *Handler) getNodes(w http.ResponseWriter, r *http.Request) {
	nodes, a := v1call.List[*v4.Node](h.v1, r, "/v1/nodes")
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	tgs, a := v1call.List[*v4.TaskGroup](h.v1, r, "/v1/taskgroups")
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	out := make([]Node, 0, len(nodes))
	index := map[string]int{}
	for _, n := range nodes {
		index[n.Metadata.Name] = len(out)
		out = append(out, Node{Name: n.Metadata.Name, Address: n.Spec.IP, CPUs: int(n.Spec.Capacity.CPU),
			Memory: int64(n.Spec.Capacity.MemoryMB * bytesPerMegabyte)})
	}
	for _, tg := range tgs {
		i, ok := index[tg.Spec.Node]
		if !ok || v4.Terminal(tg.Status.Phase) {
			continue
		}
		out[i].Containers += max(1, len(tg.Spec.Template.Spec.Containers)+len(tg.Spec.Template.Spec.Processes))
		out[i].UsedCPUs += tg.Spec.Resources.CPU
		out[i].UsedMemory += int64(tg.Spec.Resources.MemoryMB * bytesPerMegabyte)
	}
	writeJSON(w, http.StatusOK, out) // deployd answered 202 to this read; 200 is what it is
}

// driftNodes moves instances off a node: every one on it, a pod group's, or one instance
// of it. Each is a berth move; stateful instances move only with force=true. berth
// moves one instance of an application at a time, so the others of the same pod group
// are refused while the first moves (423, in the answer's data): drift them again, or
// drain the node (DELETE /api/nodes).
func (h *Handler) driftNodes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("cmd") != "drift" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter cmd=%q must be drift", q.Get("cmd")))
		return
	}
	from, to := q.Get("from"), q.Get("to")
	if from == "" || from == to {
		writeError(w, http.StatusBadRequest, "query parameters: from is required and must differ from to")
		return
	}
	force, err := boolQuery(r, "force", false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	instance := 0
	if v := q.Get("pg_instance"); v != "" {
		if instance, err = strconv.Atoi(v); err != nil || instance < 1 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter pg_instance=%q must be a whole number of at least 1", v))
			return
		}
	}
	tgs, a := h.driftTargets(r, from, q.Get("pg"), instance)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	body, _ := json.Marshal(map[string]any{"node": to, "force": force})
	var moved []string
	refused := map[string]string{}
	for _, tg := range tgs {
		res := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", tg.Metadata.Namespace, "taskgroups", tg.Metadata.Name, "move"), nil, body)
		if res.OK() {
			moved = append(moved, tg.Metadata.Name)
		} else {
			refused[tg.Metadata.Name] = res.Message()
		}
	}
	if len(moved) == 0 && len(refused) > 0 {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Message: fmt.Sprintf("no instance on %s could drift", from), Data: refused})
		return
	}
	msg := fmt.Sprintf("drifting %d instances from %s", len(moved), from)
	if len(refused) > 0 {
		msg += fmt.Sprintf(" (%d refused: %s)", len(refused), strings.Join(slices.Sorted(maps.Keys(refused)), ", "))
	}
	writeAccepted(w, msg, "/api/nodes", nil)
}

// driftTargets are the task groups on node from, of pod group pg (all when ""), of its
// instance (all when 0); daemonsets' and dependencies' stay, as deployd's drift left
// what was not a pod group's.
func (h *Handler) driftTargets(r *http.Request, from, pg string, instance int) ([]*v4.TaskGroup, *v1call.Answer) {
	var tgs []*v4.TaskGroup
	if pg != "" {
		d, a := h.findPodGroup(r, pg)
		if a != nil {
			return nil, a
		}
		if tgs, a = h.ownedTaskGroups(r, d.Metadata.Namespace, d.Metadata.Name); a != nil {
			return nil, a
		}
	} else {
		var a *v1call.Answer
		if tgs, a = v1call.List[*v4.TaskGroup](h.v1, r, "/v1/taskgroups"); a != nil {
			return nil, a
		}
	}
	var out []*v4.TaskGroup
	for _, tg := range tgs {
		kind := tg.Spec.Owner.Kind
		if tg.Spec.Node != from || v4.Terminal(tg.Status.Phase) || (kind != v4.KindApplication && kind != v4.KindProcess) ||
			(instance > 0 && tg.Spec.Index != instance-1) {
			continue
		}
		out = append(out, tg)
	}
	return out, nil
}

// removeNode takes a node out, as deployd did (a maintenance constraint, then every
// instance drifted with force): berth drains it, forced.
func (h *Handler) removeNode(w http.ResponseWriter, r *http.Request) {
	node := r.URL.Query().Get("node")
	if node == "" {
		writeError(w, http.StatusBadRequest, "query parameter node is required")
		return
	}
	a := h.v1.Call(r, http.MethodPost, v1call.Path("nodes", node, "drain"), url.Values{"force": {"true"}}, nil)
	if !a.OK() {
		writeAnswerError(w, a)
		return
	}
	writeAccepted(w, "node "+node+" draining", "/api/nodes", nil)
}
