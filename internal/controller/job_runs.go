package controller

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Results of a job's ended run (JobRunRecord.Result).
const (
	runSucceeded = "Succeeded"
	runFailed    = "Failed"
	runIgnored   = "Ignored"
	runStopped   = "Stopped"
)

// runOutcome is how one ended run of a job ended.
type runOutcome struct {
	result   string
	exitCode int
	task     string // the main task whose exit code decided ("" when none did)
	// failJob is the failure policy's verdict: the job fails at once, why says so.
	failJob bool
	why     string
}

// active reports whether a run of a job has not ended: it runs, starts, or is being
// stopped. A Lost run ended: its node is gone (the agent that comes back stops it).
func activeRun(tg *v4.TaskGroup) bool {
	return !v4.Terminal(tg.Status.Phase) && tg.Status.Phase != v4.StatusLost
}

// outcome classifies an ended run: stopped by berth, succeeded (Finish, every main task
// exited 0), or failed, and what the pod failure policy says of a failure.
func outcome(tg *v4.TaskGroup, fp *v4.PodFailurePolicy) runOutcome {
	if tg.Spec.Desired == v4.DesiredStopped {
		return runOutcome{result: runStopped}
	}
	o := runOutcome{result: runSucceeded}
	for _, t := range tg.Status.Tasks {
		if t.Role == "" && t.Info.ExitCode != 0 && o.task == "" {
			o.exitCode, o.task = t.Info.ExitCode, t.Name
		}
	}
	if tg.Status.Phase == v4.StatusFinish && o.task == "" {
		return o
	}
	o.result = runFailed
	if fp == nil {
		return o
	}
	for i, r := range fp.Rules {
		if !ruleMatches(r.OnExitCodes, tg.Status.Tasks) {
			continue
		}
		switch r.Action {
		case v4.FailureFailJob:
			o.failJob = true
			o.why = fmt.Sprintf("%s failed with exit code %d, which podFailurePolicy.rules[%d] says fails the job", tg.Metadata.Name, o.exitCode, i)
		case v4.FailureIgnore:
			o.result = runIgnored
		}
		return o
	}
	return o
}

// ruleMatches reports whether a main task (the one the rule names, if it names one)
// exited with a non-zero code the requirement matches, as Kubernetes' onExitCodes.
func ruleMatches(req *v4.ExitCodeRequirement, tasks []v4.TaskStatus) bool {
	if req == nil {
		return false
	}
	for _, t := range tasks {
		if t.Role != "" || t.Info.ExitCode == 0 || req.ContainerName != "" && req.ContainerName != t.Name {
			continue
		}
		if req.Matches(t.Info.ExitCode) {
			return true
		}
	}
	return false
}

// record is the JobRunRecord of an ended run.
func record(tg *v4.TaskGroup, o runOutcome) v4.JobRunRecord {
	msg := tg.Status.Message
	for _, t := range tg.Status.Tasks {
		if t.Name == o.task && t.Message != "" {
			msg = t.Message
		}
	}
	if len(msg) > v4.MaxRecordMessage {
		msg = msg[:v4.MaxRecordMessage]
	}
	finished := tg.Status.FinishedAt
	if finished.IsZero() {
		finished = tg.Status.Updated
	}
	return v4.JobRunRecord{TaskGroup: tg.Metadata.Name, Index: tg.Spec.Index, Attempt: tg.Spec.ReschedTimes, Node: tg.Spec.Node,
		Result: o.result, ExitCode: o.exitCode, StartedAt: tg.Status.StartedAt, FinishedAt: finished, Message: msg}
}

// keepLatest bounds the records a pass collects: past twice MaxJobRecords it keeps the
// MaxJobRecords that ended last, so a pass over a job of 10,000 ended runs sorts small
// slices, not all of them.
func keepLatest(recs []v4.JobRunRecord) []v4.JobRunRecord {
	if len(recs) < 2*v4.MaxJobRecords {
		return recs
	}
	slices.SortFunc(recs, byFinish)
	return append(recs[:0], recs[len(recs)-v4.MaxJobRecords:]...)
}

func byFinish(a, b v4.JobRunRecord) int {
	if c := a.FinishedAt.Compare(b.FinishedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.TaskGroup, b.TaskGroup)
}

// mergeRecords keeps the records of runs that ended most recently: those of this pass,
// and those of earlier passes whose task groups are gone (ignored or stopped runs).
func mergeRecords(old, cur []v4.JobRunRecord) []v4.JobRunRecord {
	seen := make(map[string]bool, len(cur))
	for _, r := range cur {
		seen[r.TaskGroup] = true
	}
	out := slices.Clone(cur)
	for _, r := range old {
		if !seen[r.TaskGroup] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, byFinish)
	if len(out) > v4.MaxJobRecords {
		out = out[len(out)-v4.MaxJobRecords:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// retryDelay is the wait before a failed index runs again, after n failures of the job
// since its last success.
func retryDelay(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < jobRetryCap; i++ {
		d *= 2
	}
	return min(d, jobRetryCap)
}

// setCondition sets the condition typ True (keeping its time when it already was) or,
// with status false, False when it was set before.
func setCondition(conds []v4.JobCondition, typ string, status bool, reason, msg string, now time.Time) []v4.JobCondition {
	want := "False"
	if status {
		want = "True"
	}
	for i, c := range conds {
		if c.Type != typ {
			continue
		}
		if c.Status != want {
			conds = slices.Clone(conds)
			conds[i] = v4.JobCondition{Type: typ, Status: want, Reason: reason, Message: msg, Time: now}
		}
		return conds
	}
	if !status {
		return conds
	}
	return append(slices.Clone(conds), v4.JobCondition{Type: typ, Status: want, Reason: reason, Message: msg, Time: now})
}
