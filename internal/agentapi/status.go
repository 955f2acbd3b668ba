package agentapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// Status reports: the agent writes only a task group's status, never its spec.

// handleAgentStatus writes one task group's status; 404 when the task group is gone (the
// agent then stops it). An ignored report (see statusNeeded) answers 200 as well, with
// the stored task group, so the agent does not retry it.
func (a *API) handleAgentStatus(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var st v4.TaskGroupStatus
	if err := httpapi.DecodeStrict(body, &st); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a task group status: %v", err)
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	tg, err := a.writeStatus(ctx, ns, name, httpapi.NodeOf(r), st)
	if errors.Is(err, errOtherNode) {
		err = httpapi.Errorf(http.StatusForbidden, "this agent's certificate is for node %s: %v", httpapi.NodeOf(r), err)
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, tg)
	return nil
}

// errOtherNode says a report came from a node the task group is not bound to.
var errOtherNode = errors.New("bound to another node")

// writeStatus sets the status of task group ns/name with a read-modify-write on its
// resourceVersion, retried when another writer (a controller changing the spec) gets in
// between. node, when set, must be the task group's node (errOtherNode otherwise). It
// returns the stored task group, unchanged when the report is ignored.
func (a *API) writeStatus(ctx context.Context, ns, name, node string, st v4.TaskGroupStatus) (*v4.TaskGroup, error) {
	res, err := a.writeStatuses(ctx, node, []statusWrite{{ns: ns, name: name, st: st}})
	if err != nil {
		return nil, err
	}
	return res[0].tg, res[0].err
}

// writeStatuses is writeStatus for several task groups of one node (each write's node is
// set to it), which go to the status batcher together; the i-th result is the i-th
// write's: its task group, or its error (a *httpapi.Error or errOtherNode for what the
// write's own request would answer). err is the request's end.
func (a *API) writeStatuses(ctx context.Context, node string, ws []statusWrite) ([]statusResult, error) {
	out := make([]statusResult, len(ws))
	valid := make([]statusWrite, 0, len(ws))
	where := make([]int, 0, len(ws)) // where[j]: the place in ws of valid[j]
	for i := range ws {
		w := &ws[i]
		v4.ClampStatus(&w.st)
		if fe := v4.ValidateTaskGroupStatus(&w.st); len(fe) > 0 {
			ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage(fmt.Sprintf("the status of task group %s/%s", w.ns, w.name), fe))
			ae.Details = fe
			out[i].err = ae
			continue
		}
		w.node = node
		valid, where = append(valid, *w), append(where, i)
	}
	if len(valid) == 0 {
		return out, nil
	}
	res, err := a.statuses.submit(ctx, valid)
	if err != nil {
		if len(valid) == 1 {
			return nil, fmt.Errorf("write the status of task group %s/%s: %w", valid[0].ns, valid[0].name, err)
		}
		return nil, fmt.Errorf("write the statuses of %d task groups: %w", len(valid), err)
	}
	a.writeAlone(ctx, valid, res)
	for j, r := range res {
		if r.err == nil && r.changed {
			a.recordPhase(r.tg)
			if r.tg.Status.Phase == v4.StatusRunning {
				a.checkIPs(r.tg)
			}
		}
		out[where[j]] = r
	}
	return out, nil
}

// writeAlone writes the writes a batch could not take alone (writeStatusAlone), at most
// aloneWriters at once, and sets their results.
func (a *API) writeAlone(ctx context.Context, ws []statusWrite, res []statusResult) {
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, aloneWriters)
	)
	for i := range res {
		if !res[i].alone {
			continue
		}
		w, r := &ws[i], &res[i]
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r.tg, r.changed, r.err = a.writeStatusAlone(ctx, w.ns, w.name, w.node, w.st)
			r.alone = false
		})
	}
	wg.Wait()
}

// aloneWriters bounds the writes of one request that go alone at once (each reads etcd).
const aloneWriters = 64

// writeStatusAlone is writeStatus in a transaction of its own, reading etcd: for what a
// batch cannot take (status_batch.go). changed says whether the phase changed.
func (a *API) writeStatusAlone(ctx context.Context, ns, name, node string, st v4.TaskGroupStatus) (*v4.TaskGroup, bool, error) {
	for range agentWriteAttempts {
		tg, err := a.taskGroups().Get(ctx, ns, name)
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, httpapi.Errorf(http.StatusNotFound, "task group %s/%s not found", ns, name)
		}
		if err != nil {
			return nil, false, err
		}
		if node != "" && tg.Spec.Node != node {
			return nil, false, fmt.Errorf("task group %s/%s: %w %q", ns, name, errOtherNode, tg.Spec.Node)
		}
		st.Remote = tg.Status.Remote // the server's own
		st.KeepLastPhase(tg.Status)
		if !statusNeeded(tg.Status, st) {
			return tg, false, nil
		}
		old := tg.Status.Phase
		tg.Status = st
		err = a.store.Update(ctx, tg, store.Raw{})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return tg, st.Phase != old && st.Phase != "", nil
	}
	return nil, false, httpapi.Errorf(http.StatusConflict, "task group %s/%s changed %d times while its status was written", ns, name, agentWriteAttempts)
}

// statusNeeded reports whether a reported status is to be written: statusWanted, and not
// what is stored already (an agent's full report repeats every status it reported; a
// task group's status is written when it changes, not every report).
func statusNeeded(stored, reported v4.TaskGroupStatus) bool {
	return statusWanted(stored, reported) && !sameStatus(stored, reported)
}

// sameStatus compares two statuses as they are stored: by their JSON. Every status an
// agent reports is compared, so what surely differs (the phase, a task's PID: most
// reports) or is surely the same (equal values) is told without encoding either.
func sameStatus(a, b v4.TaskGroupStatus) bool {
	if surelyDiffer(a, b) {
		return false
	}
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
}

// surelyDiffer reports whether two statuses differ in a field that is written to JSON
// as it is: the phase, the number of tasks, a task's name, status or PID.
func surelyDiffer(a, b v4.TaskGroupStatus) bool {
	if a.Phase != b.Phase || len(a.Tasks) != len(b.Tasks) {
		return true
	}
	for i := range a.Tasks {
		ta, tb := &a.Tasks[i], &b.Tasks[i]
		if ta.Info.Pid != tb.Info.Pid || ta.Status != tb.Status || ta.Name != tb.Name {
			return true
		}
	}
	return false
}

// statusWanted applies BCS's rule that a task group's terminal status is final: a later
// report is ignored, unless it is a new run of the pod (an adopted or restarted one): a
// non-terminal phase whose tasks have other PIDs than the stored ones.
func statusWanted(stored, reported v4.TaskGroupStatus) bool {
	if !v4.Terminal(stored.Phase) {
		return true
	}
	if v4.Terminal(reported.Phase) {
		return false
	}
	got := pids(reported)
	return len(got) > 0 && !slices.Equal(got, pids(stored))
}

// pids returns the non-zero PIDs of a status's tasks, sorted.
func pids(st v4.TaskGroupStatus) []int {
	var out []int
	for _, t := range st.Tasks {
		if t.Info.Pid != 0 {
			out = append(out, t.Info.Pid)
		}
	}
	slices.Sort(out)
	return out
}

// recordPhase records a task group's phase change as an event (a warning when it failed
// or was lost), so `berth events` shows the life of each instance.
func (a *API) recordPhase(tg *v4.TaskGroup) {
	typ := v4.EventNormal
	switch tg.Status.Phase {
	case v4.StatusFailed, v4.StatusLost, v4.StatusError:
		typ = v4.EventWarning
	}
	msg := fmt.Sprintf("taskgroup %s/%s is %s on node %s", tg.Metadata.Namespace, tg.Metadata.Name, tg.Status.Phase, tg.Spec.Node)
	if tg.Status.Message != "" {
		msg += ": " + tg.Status.Message
	}
	rec := v4.Event{Type: typ, Reason: tg.Status.Phase, Kind: v4.KindTaskGroup,
		Namespace: tg.Metadata.Namespace, Name: tg.Metadata.Name, Message: msg}
	a.store.QueueEvent(rec)
}

// reportUnchanged reports whether the shared cache already holds a task group of node
// with a status the report would not change: a full report then reads nothing from etcd
// for it (most of a report, most of the time). A cache a moment behind at worst delays a
// change to the next report or status update.
func (a *API) reportUnchanged(ns, name, node string, st v4.TaskGroupStatus) bool {
	o, ok := a.taskGroupCache.Get(ns, name)
	if !ok {
		return false
	}
	tg := o.(*v4.TaskGroup)
	if tg.Spec.Node != node {
		return false // writeStatus tells the agent
	}
	v4.ClampStatus(&st)
	return !statusNeeded(tg.Status, st)
}

// handleAgentReport writes every status of a full report and answers the task groups
// the server does not have, or that are bound to another node: the agent stops those.
func (a *API) handleAgentReport(w http.ResponseWriter, r *http.Request) error {
	node := r.PathValue("name")
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var rep v4.AgentReport
	if err := httpapi.DecodeStrict(body, &rep); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a report: %v", err)
	}
	// A task group reported twice would be written twice: an agent reports each once, and
	// a body of one task group repeated would make the server write it thousands of times.
	seen := make(map[v4.TaskGroupRef]bool, len(rep.TaskGroups))
	for i, tr := range rep.TaskGroups {
		ref := v4.TaskGroupRef{Namespace: tr.Namespace, Name: tr.Name}
		switch {
		case tr.Namespace == "" || tr.Name == "":
			return httpapi.Errorf(http.StatusBadRequest, "taskGroups[%d]: namespace and name are required", i)
		case seen[ref]:
			return httpapi.Errorf(http.StatusBadRequest, "taskGroups[%d]: %s/%s is reported twice", i, tr.Namespace, tr.Name)
		}
		seen[ref] = true
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	// The writes go to the status batcher together, maxStatusBatch at a time.
	var ws []statusWrite
	for _, tr := range rep.TaskGroups {
		if !a.reportUnchanged(tr.Namespace, tr.Name, node, tr.Status) {
			ws = append(ws, statusWrite{ns: tr.Namespace, name: tr.Name, st: tr.Status})
		}
	}
	unknown := []v4.TaskGroupRef{}
	for len(ws) > 0 {
		chunk := ws[:min(len(ws), maxStatusBatch)]
		ws = ws[len(chunk):]
		res, err := a.writeStatuses(ctx, node, chunk)
		if err != nil {
			return err
		}
		for i, r := range res {
			if ae, ok := errors.AsType[*httpapi.Error](r.err); (ok && ae.Code == http.StatusNotFound) || errors.Is(r.err, errOtherNode) {
				unknown = append(unknown, v4.TaskGroupRef{Namespace: chunk[i].ns, Name: chunk[i].name})
			} else if r.err != nil {
				return r.err
			}
		}
	}
	slices.SortFunc(unknown, func(a, b v4.TaskGroupRef) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	httpapi.WriteJSON(w, http.StatusOK, v4.AgentReportResult{Unknown: unknown})
	return nil
}
