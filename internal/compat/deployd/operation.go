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
// again, restart stopped and started it. berth keeps that state in the deployment's
// spec.stoppedInstances (docs/lifecycle.md, "Stopped instances"; deployd numbers
// instances from 1, berth from 0):
//   - stop and start of one instance are /v1's instance stop and start;
//   - stop and start of every instance are /v1's, with the index "all": one write;
//   - restart of every instance is a rollout of the same template, stamped with the
//     time of the request, which replaces the instances one at a time as cmd=spec does,
//     and runs the stopped ones again, as deployd's restart did;
//   - restart of one instance starts it when it is stopped, else moves its task group
//     to another node (docs/maintenance.md): the replacement starts before the old run
//     stops.

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
	op := q.Get("optype")
	switch {
	case op != "start" && op != "stop" && op != "restart":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter optype=%q must be start, stop or restart", op))
	case op == "restart" && instance == 0:
		h.restartAll(w, r, d, path, name)
	case op == "restart" && v4.IsStopped(d.Spec.StoppedInstances, instance-1):
		h.setStopped(w, r, d, name, instance, "start")
	case op == "restart":
		h.restartInstance(w, r, d, name, instance)
	default:
		h.setStopped(w, r, d, name, instance, op)
	}
}

// setStopped stops or starts instance n (deployd's numbers start at 1), or every one
// for 0: one write of the whole list.
func (h *Handler) setStopped(w http.ResponseWriter, r *http.Request, d *v4.Deployment, name string, n int, op string) {
	a := h.instanceCall(r, d, n, op)
	if !a.OK() {
		writeAnswerError(w, a)
		return
	}
	which := "podgroup"
	if n > 0 {
		which = fmt.Sprintf("podgroup instance %d", n)
	}
	verb := "starting"
	if op == "stop" {
		verb = "stopping"
	}
	writeAccepted(w, which+" "+verb, checkURL(name), a.Warnings)
}

// instanceCall asks /v1 to stop or start (op) instance n of d (deployd's numbers start
// at 1), or every one for 0.
func (h *Handler) instanceCall(r *http.Request, d *v4.Deployment, n int, op string) v1call.Answer {
	index := "all"
	if n > 0 {
		index = strconv.Itoa(n - 1)
	}
	return h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", d.Metadata.Namespace, "deployments", d.Metadata.Name,
		"instances", index, op), nil, nil)
}

// restartAll rolls every instance: the template's restart stamp changes, so the
// deployment rolls out the same pods again, the stopped ones running again.
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
	stopped := len(d.Spec.StoppedInstances) > 0
	if _, ok := h.putPodGroup(w, r, path, d); !ok {
		return
	}
	if stopped { // the rollout keeps them stopped: deployd's restart ran them
		if a := h.instanceCall(r, d, 0, "start"); !a.OK() {
			writeAnswerError(w, a)
			return
		}
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
