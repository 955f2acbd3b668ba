package deployd

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd's cmd=operation set an instance's (or every instance's, instance=0) target
// state: stop kept the pod group's count and left the container stopped, start ran it
// again, restart stopped and started it, one instance after another. berth keeps every
// instance of a deployment running, so only restart is served:
//   - every instance: a rollout of the same template, stamped with the time of the
//     request, which replaces the instances one at a time as cmd=spec does;
//   - one instance: a move of its task group to another node (docs/maintenance.md): the
//     replacement starts before the old run stops.
// stop and start are refused, naming what berth does instead.

// RestartedAnnotation, on a deployment's template, is when deployd's restart of every
// instance was asked for; changing it rolls the instances.
const RestartedAnnotation = "deployd.lain.io/restarted-at"

func (h *Handler) operation(w http.ResponseWriter, r *http.Request, d *v4.Deployment, path, name string) {
	q := r.URL.Query()
	instance := 0 // deployd's "every instance"
	if s := q.Get("instance"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > d.Spec.Instance {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter instance=%q must be 0 (every instance) to %d", s, d.Spec.Instance))
			return
		}
		instance = n
	}
	switch op := q.Get("optype"); op {
	case "restart":
	case "start", "stop":
		writeError(w, http.StatusBadRequest, "optype="+op+" is not supported by berth: every instance of a pod group runs; "+
			"stop them all with cmd=replica&num_instances=0, restart them with optype=restart")
		return
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter optype=%q must be start, stop or restart", op))
		return
	}
	if instance == 0 {
		h.restartAll(w, r, d, path, name)
		return
	}
	h.restartInstance(w, r, d, name, instance)
}

// restartAll rolls every instance: the template's restart stamp changes, so the
// deployment rolls out the same pods again.
func (h *Handler) restartAll(w http.ResponseWriter, r *http.Request, d *v4.Deployment, path, name string) {
	if d.Spec.Template == nil {
		writeError(w, http.StatusBadRequest, "pod group "+name+" has no pod template to restart")
		return
	}
	if d.Spec.Template.Metadata == nil {
		d.Spec.Template.Metadata = &v4.TemplateMeta{}
	}
	if d.Spec.Template.Metadata.Annotations == nil {
		d.Spec.Template.Metadata.Annotations = map[string]string{}
	}
	d.Spec.Template.Metadata.Annotations[RestartedAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	if _, ok := h.putPodGroup(w, r, path, d); !ok {
		return
	}
	writeAccepted(w, "podgroup restarting", checkURL(name), nil)
}

// restartInstance moves instance n (deployd's numbers start at 1) to another node.
func (h *Handler) restartInstance(w http.ResponseWriter, r *http.Request, d *v4.Deployment, name string, n int) {
	tgs, a := h.ownedTaskGroups(r, d.Metadata.Namespace, d.Metadata.Name)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	for _, tg := range tgs {
		if tg.Spec.Index+1 != n || tg.Status.Phase != v4.StatusRunning {
			continue
		}
		a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", tg.Metadata.Namespace, "taskgroups", tg.Metadata.Name, "move"), nil, []byte(`{}`))
		if !a.OK() {
			writeAnswerError(w, a)
			return
		}
		writeAccepted(w, fmt.Sprintf("podgroup instance %d restarting (moved to another node)", n), checkURL(name), a.Warnings)
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("pod group %s has no running instance %d", name, n))
}
