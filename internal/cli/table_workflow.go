package cli

import (
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// workflowColumns are `berth get workflows`' columns, after Argo's: the phase, the
// steps (Pod nodes) finished of those made so far, when it started, how long it ran and
// its message. (Nodes kept outside the object are not read for a list: PROGRESS is then
// what the object holds, and `berth workflow get` counts them all.)
func workflowColumns(now time.Time) kindColumns {
	return kindColumns{[]string{"PHASE", "PROGRESS", "STARTED", "DURATION", "MESSAGE"}, func(o v4.Object) []string {
		w, _ := o.(*v4.Workflow)
		if w == nil {
			return []string{"", "", "", "", ""}
		}
		st := w.Status
		started, dur := none, none
		if !st.StartedAt.IsZero() {
			started, dur = age(st.StartedAt, now)+" ago", nodeDuration(st.StartedAt, st.FinishedAt, now)
		}
		return []string{orNone(st.Phase), wfProgress(inlineNodes(w)), started, dur, orNone(shortMessage(st.Message))}
	}}
}

// shortMessage is a workflow's message as a table's cell: one line of 60 runes at most.
func shortMessage(s string) string {
	msg := oneLine(s)
	if r := []rune(msg); len(r) > 60 {
		msg = string(r[:59]) + "…"
	}
	return msg
}

func workflowTemplateColumns() kindColumns {
	return kindColumns{[]string{"TEMPLATES", "ENTRYPOINT"}, func(o v4.Object) []string {
		w, _ := o.(*v4.WorkflowTemplate)
		if w == nil {
			return []string{"", ""}
		}
		return []string{strconv.Itoa(len(w.Spec.Templates)), orNone(w.Spec.Entrypoint)}
	}}
}
