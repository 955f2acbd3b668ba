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
// task groups run (docs/lifecycle.md), so after it the BCS route replaces the first N
// instances itself, each by a move (the one BCS's rescheduler route makes): the
// replacement starts, on any node, this one included, before the old run stops. A task
// group already made from the stored version is left alone, so an update that changed
// nothing replaces nothing, and so is an instance stopped on purpose (docs/lifecycle.md).

// maxReplaceWarnings bounds the warnings of instances that could not be replaced.
const maxReplaceWarnings = 10

// replaceCount reads ?instances=N: the number of instances to replace, every one
// (-1) when absent.
func replaceCount(r *http.Request) (int, *failure) {
	v := r.URL.Query().Get("instances")
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, &failure{code: CodeDriverParameter, message: fmt.Sprintf("query parameter instances=%q is not a whole number", v)}
	}
	return n, nil
}

// replaceFirst moves the first n task groups (all when n < 0) of the workload that the
// /v1 update answered with, and returns a warning for each it could not move.
func (h *Handler) replaceFirst(r *http.Request, plural, name string, updated []byte, n int) []string {
	var wl v4.Workload
	if err := json.Unmarshal(updated, &wl); err != nil {
		return []string{v1call.Warning("the instances were not replaced: the updated " + plural + " could not be read: " + err.Error())}
	}
	ns := r.PathValue("ns")
	by, f := h.taskGroupsByOwner(r, ns, workloadKind(plural))
	if f != nil {
		return []string{v1call.Warning("the instances were not replaced: " + f.message)}
	}
	var warnings []string
	failed := 0
	for _, tg := range by[name] {
		if n >= 0 && tg.Spec.Index >= n {
			break // sorted by index
		}
		if tg.Spec.OwnerVersion == wl.Metadata.ResourceVersion || tg.Spec.Desired == v4.DesiredStopped ||
			v4.IsStopped(wl.Spec.StoppedInstances, tg.Spec.Index) { // a stopped instance stays stopped
			continue
		}
		a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", ns, "taskgroups", tg.Metadata.Name, "move"), nil,
			[]byte(`{"force": true, "orHere": true}`))
		if a.OK() {
			continue
		}
		if failed++; failed <= maxReplaceWarnings {
			warnings = append(warnings, v1call.Warning(fmt.Sprintf("instance %d was not replaced: %s", tg.Spec.Index, a.Message())))
		}
	}
	if failed > maxReplaceWarnings {
		warnings = append(warnings, v1call.Warning(fmt.Sprintf("%d more instances were not replaced", failed-maxReplaceWarnings)))
	}
	return warnings
}
