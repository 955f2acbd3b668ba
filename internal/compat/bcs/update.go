package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS's update of an application or process (and its rollback, an update to an older
// definition) relaunched the first ?instances=N task groups with the new version, or all
// of them without the parameter. berth's /v1 update of a workload only changes what new
// task groups run (docs/lifecycle.md), so after it the BCS route asks /v1 to replace the
// first N instances (POST .../replace): the application controller moves them one after
// another, each replacement started before its old run stops, on any node, its own
// included. An instance already running the stored template is left alone, so an update
// that changed nothing replaces nothing, and so is an instance stopped on purpose. A
// replace under way from an earlier update is superseded, as BCS's next update was.

// replaceCount reads ?instances=N: the number of instances to replace, every one
// (-1) when absent.
func replaceCount(r *http.Request) (int, *failure) {
	v := r.URL.Query().Get("instances")
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > v4.MaxInstances {
		return 0, &failure{code: CodeDriverParameter, message: fmt.Sprintf("query parameter instances=%q is not a whole number from 0 to %d", v, v4.MaxInstances)}
	}
	return n, nil
}

// replaceFirst asks /v1 to replace the first n instances (all when n < 0) of the
// workload just updated, and returns a warning when it was refused. BCS relaunched the
// instances of stateful workloads too, so the replace is forced.
func (h *Handler) replaceFirst(r *http.Request, plural, name string, n int) []string {
	if n == 0 {
		return nil
	}
	req := v4.ReplaceRequest{Force: true}
	if n > 0 {
		req.Instances = &n
	}
	body, err := json.Marshal(req)
	if err != nil {
		return []string{v1call.Warning("the instances were not replaced: " + err.Error())}
	}
	a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", r.PathValue("ns"), plural, name, "replace"), nil, body)
	if !a.OK() {
		return []string{v1call.Warning("the instances were not replaced: " + a.Message())}
	}
	return nil
}
