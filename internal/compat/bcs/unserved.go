package bcs

import (
	"net/http"
)

// Routes of BCS's driver that bcs-client calls and berth does not serve answer what an
// unknown route answers (HTTP 404, 1405202), with a message that says why and what to use
// instead (docs/compat.md, the routes table), not only "no route".

func (h *Handler) unservedRoutes() {
	for pattern, why := range unserved {
		h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound, message: why})
		})
	}
}

var unserved = map[string]string{
	// bcs-client as --delete. BCS's scheduler stopped serving it (its delete of agent
	// settings is commented out), so no BCS release a user moves from deleted settings.
	"DELETE /agentsettings": "deleting agent settings is not served (BCS's scheduler no longer served it): " +
		"replace a node's attributes with POST /agentsettings, its taints with PUT /agentsettings/taint, " +
		"and enable it with POST /agentsettings/enable",
	// bcs-client exec's create_exec, start_exec and resize_exec are served (exec.go);
	// BCS's console proxy had no others that bcs-client calls.
	"/webconsole/": "BCS's console proxy routes served are create_exec, start_exec and resize_exec (bcs-client exec); " +
		"berth exec NAMESPACE/TASKGROUP -- CMD runs a command in a task (docs/agent.md, \"Exec stream\")",
	// BCS's older scheduler kept custom resources in its store under these routes; the
	// bcs-client of BCS's later releases calls /customresourcedefinitions and
	// /customresources/... (customresources.go), which berth serves.
	"/crr/": customResources,
	"/crd/": customResources,
}

const customResources = "the scheduler's crr and crd routes are not served: berth serves custom resources as " +
	"BCS's driver did, at /customresourcedefinitions and /customresources/{group}/{version}/namespaces/{ns}/{plural} (docs/compat.md)"
