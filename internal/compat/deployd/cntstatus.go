package deployd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd kept the last docker events of each instance's container (a ring of 20) and
// answered them, oldest first, on GET /api/cntstatushistory?name=&instance=. berth
// records every phase change of a task group as an event of it (docs/api.md, "Events");
// the history is the instance's task group's latest such events, each phase named by
// the docker event it matches.

// statusHistorySize is how many entries deployd kept for an instance.
const statusHistorySize = 20

// StatusMessage is one entry of deployd's container status history: a docker event.
type StatusMessage struct {
	Status string `json:"status,omitempty"`
	From   string `json:"from,omitempty"` // the container's image
	Time   int64  `json:"time,omitempty"` // Unix seconds
	Action string `json:"action,omitempty"`
}

// dockerEvents names berth's phases as the docker events deployd recorded; the others
// are berth's phase in lowercase.
var dockerEvents = map[string]string{
	v4.StatusRunning: "start", v4.StatusRestarting: "restart", v4.StatusKilling: "kill",
	v4.StatusKilled: "stop", v4.StatusFinish: "die", v4.StatusFailed: "die", v4.StatusError: "die",
}

func (h *Handler) getStatusHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	if name == "" {
		writeError(w, http.StatusBadRequest, "query parameter name is required (the pod group)")
		return
	}
	instance, err := strconv.Atoi(q.Get("instance"))
	if err != nil || instance < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter instance=%q must be an instance number, 1 or more", q.Get("instance")))
		return
	}
	d, a := h.findPodGroup(r, name)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	tgs, a := h.ownedTaskGroups(r, d.Metadata.Namespace, d.Metadata.Name)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	out := []StatusMessage{} // deployd answered [] for an instance it had no history of
	for _, tg := range tgs {
		if tg.Spec.Index+1 != instance {
			continue
		}
		msgs, a := h.taskGroupHistory(r, tg)
		if a != nil {
			writeAnswerError(w, *a)
			return
		}
		out = append(out, msgs...)
	}
	if len(out) > statusHistorySize { // two task groups of one instance during a roll
		out = out[len(out)-statusHistorySize:]
	}
	writeJSON(w, http.StatusOK, out)
}

// taskGroupHistory is a task group's latest phase events, oldest first.
func (h *Handler) taskGroupHistory(r *http.Request, tg *v4.TaskGroup) ([]StatusMessage, *v1call.Answer) {
	q := url.Values{"namespace": {tg.Metadata.Namespace}, "kind": {string(v4.KindTaskGroup)}, "name": {tg.Metadata.Name},
		"order": {"newest"}, "limit": {strconv.Itoa(statusHistorySize)}}
	a := h.v1.Call(r, http.MethodGet, "/v1/events", q, nil)
	if !a.OK() {
		return nil, &a
	}
	var list struct {
		Items []v4.Event `json:"items"`
	}
	if err := json.Unmarshal(a.Body, &list); err != nil {
		f := v1call.Failed(http.StatusInternalServerError, "decode the events: "+err.Error())
		return nil, &f
	}
	image := ""
	if cs := tg.Spec.Template.Spec.Containers; len(cs) > 0 {
		image = cs[0].Image
	}
	var out []StatusMessage
	for _, e := range slices.Backward(list.Items) {
		status := dockerEvents[e.Reason]
		if status == "" {
			status = strings.ToLower(e.Reason)
		}
		out = append(out, StatusMessage{Status: status, From: image, Time: e.Time.Unix(), Action: status})
	}
	return out, nil
}
