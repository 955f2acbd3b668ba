package deployd

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd registered the stream ports of Lain's procs: a port every node forwarded to a
// proc's port, one proc per port in the cluster. berth's equivalent is a service of a
// load-balancer group (label BCSGROUP, docs/services.md): each of its TCP ports listens
// on every node of the group and one service holds it. GET /api/ports lists those, and
// POST /api/ports?cmd=validate says which ports of a list they hold. Both read every
// namespace's services, so the caller's token needs read on services everywhere.

// StreamProc is one stream port as deployd listed it.
type StreamProc struct {
	SrcPort   int    `json:"srcport"`
	DstPort   int    `json:"dstport"` // 0: the task port the service port names
	Proto     string `json:"proto"`
	NameSpace string
	ProcName  string // the service's name
}

// maxValidatePorts bounds the ports of one validation, the most a pod group may declare
// many times over.
const maxValidatePorts = 1000

// streamPorts are the TCP ports of every load-balanced service, by port.
func (h *Handler) streamPorts(r *http.Request) ([]StreamProc, *v1call.Answer) {
	svcs, a := v1call.List[*v4.Service](h.v1, r, "/v1/services")
	if a != nil {
		return nil, a
	}
	out := []StreamProc{}
	for _, s := range svcs {
		if strings.TrimSpace(s.Metadata.Labels[v4.GroupLabel]) == "" {
			continue
		}
		for _, p := range s.Spec.Ports {
			if strings.EqualFold(p.Protocol, "http") || strings.EqualFold(p.Protocol, "udp") {
				continue // HTTP shares the group's port by host and path; UDP is not balanced
			}
			out = append(out, StreamProc{SrcPort: p.ServicePort, DstPort: p.TargetPort, Proto: "tcp",
				NameSpace: s.Metadata.Namespace, ProcName: s.Metadata.Name})
		}
	}
	slices.SortFunc(out, func(a, b StreamProc) int { return a.SrcPort - b.SrcPort })
	return out, nil
}

func (h *Handler) getPorts(w http.ResponseWriter, r *http.Request) {
	ports, a := h.streamPorts(r)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	writeJSON(w, http.StatusOK, ports)
}

// validatePorts answers 200 null when no port of the body is held, else deployd's 400
// naming the held ones.
func (h *Handler) validatePorts(w http.ResponseWriter, r *http.Request) {
	if cmd := r.URL.Query().Get("cmd"); cmd != "validate" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter cmd=%q must be validate", cmd))
		return
	}
	var body struct{ Ports []int }
	if err := decodeStrict(v1call.Body(r), &body, "ports {\"Ports\": [port, ...]}"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(body.Ports) > maxValidatePorts {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Ports: %d ports, at most %d", len(body.Ports), maxValidatePorts))
		return
	}
	for i, p := range body.Ports {
		if p < 1 || p > 65535 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Ports[%d]: %d is not a port (1-65535)", i, p))
			return
		}
	}
	held, a := h.streamPorts(r)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	var conflicts []int
	for _, p := range body.Ports {
		if slices.ContainsFunc(held, func(s StreamProc) bool { return s.SrcPort == p }) && !slices.Contains(conflicts, p) {
			conflicts = append(conflicts, p)
		}
	}
	if len(conflicts) > 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Conflicted ports: %v", conflicts))
		return
	}
	writeJSON(w, http.StatusOK, nil)
}
