package agentapi

import (
	"errors"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// handleAgentStatuses writes several statuses of the node's task groups in one request
// (v4.AgentStatuses): each is checked and written as handleAgentStatus would, and
// answered on its own, so that one invalid or gone task group does not hold back the
// others. The agent sends what changed at once, one request for all that is pending; a
// status write each was most of the cost of a burst's reports (their bodies, their
// answers of the whole task group). The list is bounded (v4.MaxAgentStatuses) and names
// each task group once; a task group of another node is answered 403 and not written.
func (a *API) handleAgentStatuses(w http.ResponseWriter, r *http.Request) error {
	node := r.PathValue("name")
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var req v4.AgentStatuses
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a list of statuses: %v", err)
	}
	if len(req.TaskGroups) > v4.MaxAgentStatuses {
		return httpapi.Errorf(http.StatusBadRequest, "taskGroups: %d statuses, over the limit of %d in one request", len(req.TaskGroups), v4.MaxAgentStatuses).
			WithDetail("taskGroups", "at most "+strconv.Itoa(v4.MaxAgentStatuses))
	}
	ws := make([]statusWrite, len(req.TaskGroups))
	seen := make(map[v4.TaskGroupRef]struct{}, len(req.TaskGroups))
	for i, tr := range req.TaskGroups {
		ref := v4.TaskGroupRef{Namespace: tr.Namespace, Name: tr.Name}
		field := "taskGroups[" + strconv.Itoa(i) + "]"
		if tr.Namespace == "" || tr.Name == "" {
			return httpapi.Errorf(http.StatusBadRequest, "%s: namespace and name are required", field).WithDetail(field, "namespace and name are required")
		}
		if _, ok := seen[ref]; ok {
			return httpapi.Errorf(http.StatusBadRequest, "%s: %s/%s is reported twice", field, tr.Namespace, tr.Name).WithDetail(field, "reported twice")
		}
		seen[ref] = struct{}{}
		ws[i] = statusWrite{ns: tr.Namespace, name: tr.Name, st: tr.Status}
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	res, err := a.writeStatuses(ctx, node, ws)
	if err != nil {
		return err
	}
	out := v4.AgentStatusesResult{Results: make([]v4.AgentStatusAnswer, len(res))}
	for i, r := range res {
		out.Results[i] = statusAnswer(node, r.err)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// statusAnswer is the answer to one status of handleAgentStatuses that ended with err.
func statusAnswer(node string, err error) v4.AgentStatusAnswer {
	if err == nil {
		return v4.AgentStatusAnswer{Code: http.StatusOK}
	}
	if errors.Is(err, errOtherNode) {
		return v4.AgentStatusAnswer{Code: http.StatusForbidden, Message: "this agent's certificate is for node " + node + ": " + err.Error()}
	}
	if ae, ok := errors.AsType[*httpapi.Error](err); ok {
		return v4.AgentStatusAnswer{Code: ae.Code, Message: ae.Message}
	}
	return v4.AgentStatusAnswer{Code: http.StatusInternalServerError, Message: err.Error()}
}
