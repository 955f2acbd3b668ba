package agentapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
	v4.ClampStatus(&st)
	if fe := v4.ValidateTaskGroupStatus(&st); len(fe) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage(fmt.Sprintf("the status of task group %s/%s", ns, name), fe))
		ae.Details = fe
		return nil, ae
	}
	res, err := a.statuses.submit(ctx, &statusWrite{ns: ns, name: name, node: node, st: st})
	if err != nil {
		return nil, fmt.Errorf("write the status of task group %s/%s: %w", ns, name, err)
	}
	if res.alone {
		res.tg, res.changed, res.err = a.writeStatusAlone(ctx, ns, name, node, st)
	}
	if res.err != nil {
		return nil, res.err
	}
	if res.changed {
		a.recordPhase(res.tg)
		if res.tg.Status.Phase == v4.StatusRunning {
			a.checkIPs(res.tg)
		}
	}
	return res.tg, nil
}

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

// sameStatus compares two statuses as they are stored: by their JSON.
func sameStatus(a, b v4.TaskGroupStatus) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
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
	// The writes go together, so they share the status batches instead of waiting for one
	// each (at most reportWriters at once).
	var (
		mu       sync.Mutex
		unknown  = []v4.TaskGroupRef{}
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, reportWriters)
	)
	for _, tr := range rep.TaskGroups {
		if a.reportUnchanged(tr.Namespace, tr.Name, node, tr.Status) {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, err := a.writeStatus(ctx, tr.Namespace, tr.Name, node, tr.Status)
			mu.Lock()
			defer mu.Unlock()
			if ae, ok := errors.AsType[*httpapi.Error](err); (ok && ae.Code == http.StatusNotFound) || errors.Is(err, errOtherNode) {
				unknown = append(unknown, v4.TaskGroupRef{Namespace: tr.Namespace, Name: tr.Name})
			} else if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	slices.SortFunc(unknown, func(a, b v4.TaskGroupRef) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	httpapi.WriteJSON(w, http.StatusOK, v4.AgentReportResult{Unknown: unknown})
	return nil
}

// reportWriters bounds the status writes one full report has in flight.
const reportWriters = 64
