package bcs

import (
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deploymentRoutes serves deployments and daemonsets.
func (h *Handler) deploymentRoutes() {
	const base = "/namespaces/{ns}/deployments"
	h.mux.HandleFunc("POST "+base, h.create("deployments"))
	h.mux.HandleFunc("PUT "+base, h.update("deployments"))
	h.mux.HandleFunc("GET "+base, h.listDeployments)
	h.mux.HandleFunc("GET "+base+"/{name}", h.getDeployment)
	h.mux.HandleFunc("DELETE "+base+"/{name}", h.delete("deployments"))
	h.mux.HandleFunc("PUT "+base+"/{name}/scale/{n}", h.scale("deployments"))
	h.mux.HandleFunc("PUT "+base+"/{name}/{action}", h.rolloutAction)
	// BCS's daemonset routes are singular.
	h.mux.HandleFunc("POST /namespaces/{ns}/daemonset", h.create("daemonsets"))
	h.mux.HandleFunc("PUT /namespaces/{ns}/daemonset", h.update("daemonsets"))
	h.mux.HandleFunc("DELETE /namespaces/{ns}/daemonset/{name}", h.delete("daemonsets"))
	h.mux.HandleFunc("GET /namespaces/{ns}/daemonset", h.listObjects("daemonsets"))
	h.mux.HandleFunc("GET /namespaces/{ns}/daemonset/{name}", h.getObject("daemonsets"))
}

// rolloutAction serves BCS's cancelupdate, pauseupdate and resumeupdate.
func (h *Handler) rolloutAction(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	var action string
	switch r.PathValue("action") {
	case "pauseupdate":
		action = "pause"
	case "resumeupdate":
		action = "resume"
	case "cancelupdate":
		// BCS's cancel ends the update in progress and goes back to the old version;
		// berth's undo does that during a rollout, but would roll back a finished one too,
		// so the phase is checked first.
		d, f := h.deployment(r, ns, name)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		switch d.Status.Phase {
		case v4.DeploymentUpdating, v4.DeploymentUpdatePaused, v4.DeploymentUpdateSuspend:
		default:
			writeFailure(w, failure{code: CodeScheduler,
				message: fmt.Sprintf("deployment %s/%s is not updating (phase %s): nothing to cancel", ns, name, d.Status.Phase)})
			return
		}
		action = "undo"
	default:
		writeFailure(w, failure{code: CodeNotFound,
			message: fmt.Sprintf("no deployment action %q (cancelupdate, pauseupdate, resumeupdate or scale/N)", r.PathValue("action"))})
		return
	}
	a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", ns, "deployments", name, "rollout", action), nil, nil)
	h.finish(w, a, false, nil)
}

// deployment reads one deployment through /v1.
func (h *Handler) deployment(r *http.Request, ns, name string) (*v4.Deployment, *failure) {
	return one[v4.Deployment](h, r, ns, "deployments", name)
}
