package deployd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// NamespaceAnnotation keeps deployd's namespace of a pod group whose berth namespace
// had to differ.
const NamespaceAnnotation = "deployd.lain.io/namespace"

func checkURL(name string) string { return "/api/podgroups?name=" + url.QueryEscape(name) }

// findPodGroup finds the deployment of deployd's pod group name. deployd's API names pod
// groups without their namespace; Lain's names start with it ("hello.web.web" is in
// "hello"), so that namespace is tried first, then every namespace the caller may read.
func (h *Handler) findPodGroup(r *http.Request, name string) (*v4.Deployment, *v1call.Answer) {
	berthName, err := BerthName("name", name)
	if err != nil {
		a := v1call.Failed(http.StatusBadRequest, err.Error())
		return nil, &a
	}
	if ns, _, ok := strings.Cut(name, "."); ok {
		if berthNS, err := BerthName("namespace", ns); err == nil {
			d, a := v1call.Get[v4.Deployment](h.v1, r, v1call.Path("namespaces", berthNS, "deployments", berthName))
			if a == nil && deploydName(d.Metadata) == name {
				return d, nil
			}
			if a != nil && a.Status != http.StatusNotFound {
				return nil, a
			}
		}
	}
	all, a := v1call.List[*v4.Deployment](h.v1, r, "/v1/deployments")
	if a != nil {
		return nil, a
	}
	for _, d := range all {
		if d.Metadata.Name == berthName && deploydName(d.Metadata) == name {
			return d, nil
		}
	}
	f := v1call.Failed(http.StatusNotFound, fmt.Sprintf("pod group %s not found", name))
	return nil, &f
}

// deploydName is the deployd name of a berth object.
func deploydName(m v4.ObjectMeta) string {
	if n := m.Annotations[NameAnnotation]; n != "" {
		return n
	}
	return m.Name
}

func (h *Handler) getPodGroup(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		writeError(w, http.StatusBadRequest, "query parameter name is required")
		return
	}
	d, a := h.findPodGroup(r, name)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	pg, a := h.podGroupOf(r, d)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	writeJSON(w, http.StatusOK, pg)
}

func (h *Handler) createPodGroup(w http.ResponseWriter, r *http.Request) {
	var pg PodGroupSpec
	if err := decodeStrict(v1call.Body(r), &pg, "PodGroupSpec"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	c, err := deploymentOf(&pg)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	d := c.obj.(*v4.Deployment)
	if d.Metadata.Namespace != pg.Namespace {
		d.Metadata.Annotations[NamespaceAnnotation] = pg.Namespace
	}
	if existing, a := v1call.Get[v4.Deployment](h.v1, r, v1call.Path("namespaces", d.Metadata.Namespace, "deployments", d.Metadata.Name)); a == nil {
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("pod group %s already exists (berth deployment %s/%s)",
			deploydName(existing.Metadata), d.Metadata.Namespace, d.Metadata.Name))
		return
	}
	body, _ := json.Marshal(d)
	a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", d.Metadata.Namespace, "deployments"), nil, body)
	if !a.OK() {
		writeAnswerError(w, a)
		return
	}
	writeAccepted(w, "podgroup created", checkURL(pg.Name), warningsOf(c.warnings, a.Warnings))
}

func (h *Handler) deletePodGroup(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	d, a := h.findPodGroup(r, name)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	res := h.v1.Call(r, http.MethodDelete, v1call.Path("namespaces", d.Metadata.Namespace, "deployments", d.Metadata.Name), nil, nil)
	if !res.OK() {
		writeAnswerError(w, res)
		return
	}
	writeAccepted(w, "podgroup deleting", checkURL(name), nil)
}

// patchPodGroup serves deployd's three commands: replica (scale, and the restart
// policy), spec (a new pod spec, rolled one instance at a time) and operation (operation.go).
func (h *Handler) patchPodGroup(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	d, a := h.findPodGroup(r, name)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	path := v1call.Path("namespaces", d.Metadata.Namespace, "deployments", d.Metadata.Name)
	switch q.Get("cmd") {
	case "replica":
		h.replica(w, r, d, path, name)
	case "spec":
		h.respec(w, r, d, path, name)
	case "operation":
		h.operation(w, r, d, path, name)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter cmd=%q must be replica, spec or operation", q.Get("cmd")))
	}
}

func (h *Handler) replica(w http.ResponseWriter, r *http.Request, d *v4.Deployment, path, name string) {
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("num_instances"))
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter num_instances=%q must be a whole number, 0 or more (0 stops every instance)", q.Get("num_instances")))
		return
	}
	if p := q.Get("restart_policy"); p != "" {
		// deployd meant to read this and never could (its option list was one string).
		policy := map[string]string{"never": v4.RestartNever, "always": v4.RestartAlways, "onfail": v4.RestartOnFailure}[p]
		if policy == "" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter restart_policy=%q must be never, always or onfail", p))
			return
		}
		if d.RestartPolicy == nil || d.RestartPolicy.Policy != policy {
			d.RestartPolicy = &v4.RestartPolicy{Policy: policy}
			if _, ok := h.putPodGroup(w, r, path, d); !ok {
				return
			}
		}
	}
	if d.Spec.Instance != n {
		body, _ := json.Marshal(map[string]int{"instances": n})
		if a := h.v1.Call(r, http.MethodPost, path+"/scale", nil, body); !a.OK() {
			writeAnswerError(w, a)
			return
		}
	}
	writeAccepted(w, "podgroup rescheduling", checkURL(name), nil)
}

// respec replaces the pod spec. As deployd merged, a container whose new CpuLimit and
// MemoryLimit are both 0 keeps its old resources.
func (h *Handler) respec(w http.ResponseWriter, r *http.Request, d *v4.Deployment, path, name string) {
	var spec PodSpec
	if err := decodeStrict(v1call.Body(r), &spec, "PodSpec"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var warnings []string
	tmpl, cons, err := templateOf(&spec, "", &warnings)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if old := d.Spec.Template; old != nil {
		for i := range tmpl.Spec.Containers {
			if i < len(spec.Containers) && i < len(old.Spec.Containers) && spec.Containers[i].CpuLimit == 0 && spec.Containers[i].MemoryLimit == 0 {
				tmpl.Spec.Containers[i].Resources = old.Spec.Containers[i].Resources
			}
		}
	}
	d.Spec.Template, d.Constraint, d.KillPolicy = tmpl, cons, killPolicyOf(spec.KillTimeout)
	d.Metadata.Labels = spec.Labels
	if spec.Stateful {
		if d.Metadata.Annotations == nil { // a deployment written through /v1
			d.Metadata.Annotations = map[string]string{}
		}
		d.Metadata.Annotations[v4.StatefulAnnotation] = "true"
	} else {
		delete(d.Metadata.Annotations, v4.StatefulAnnotation)
	}
	a, ok := h.putPodGroup(w, r, path, d)
	if !ok {
		return
	}
	writeAccepted(w, "podgroup upgrading", checkURL(name), warningsOf(warnings, a.Warnings))
}

// putPodGroup writes d through /v1 as the pod group's new spec, without its status and
// version (the controller writes the status meanwhile). When /v1 refuses it answers w
// with the refusal and returns false.
func (h *Handler) putPodGroup(w http.ResponseWriter, r *http.Request, path string, d *v4.Deployment) (v1call.Answer, bool) {
	d.Status = v4.DeploymentStatus{}
	d.Metadata.ResourceVersion = ""
	body, _ := json.Marshal(d)
	a := h.v1.Call(r, http.MethodPut, path, nil, body)
	if !a.OK() {
		writeAnswerError(w, a)
		return a, false
	}
	return a, true
}

// warningsOf joins the front door's warnings (texts) and /v1's (header values).
func warningsOf(own, v1 []string) []string {
	var out []string
	for _, t := range own {
		out = append(out, v1call.Warning(t))
	}
	return append(out, v1...)
}
