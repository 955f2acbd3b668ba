package v4

import (
	"errors"
	"strings"
	"testing"
)

const jobDoc = `apiVersion: v4
kind: job
metadata: {name: train, namespace: ml}
spec:
  completions: 20
  parallelism: 5
  completionMode: indexed
  podFailurePolicy:
    rules:
    - {action: failjob, onExitCodes: {operator: In, values: [42]}}
    - {action: Ignore, onExitCodes: {containerName: work, operator: notin, values: [1, 2]}}
  template:
    spec:
      processes:
      - {procName: work, startCmd: "echo $BERTH_JOB_INDEX"}
`

func parseJob(t *testing.T, doc string) *Job {
	t.Helper()
	docs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return docs[0].Object.(*Job)
}

// A job decodes with its defaults filled and its enumerations in canonical case.
func TestJobDecodesAndDefaults(t *testing.T) {
	j := parseJob(t, jobDoc)
	s := j.Spec.Settings()
	if s.Completions != 20 || s.Parallelism != 5 || s.BackoffLimit != DefaultBackoffLimit || !s.Indexed {
		t.Errorf("settings %+v", s)
	}
	if j.Spec.CompletionMode != CompletionIndexed || j.Spec.Template.Spec.NetworkMode != "HOST" {
		t.Errorf("spec %+v", j.Spec)
	}
	r := j.Spec.PodFailurePolicy.Rules
	if r[0].Action != FailureFailJob || r[1].OnExitCodes.Operator != OperatorNotIn {
		t.Errorf("rules %+v", r)
	}
	if !r[1].OnExitCodes.Matches(3) || r[1].OnExitCodes.Matches(2) || !r[0].OnExitCodes.Matches(42) {
		t.Error("exit code matching")
	}
	if k, err := ParseKind("jobs"); err != nil || k != KindJob {
		t.Errorf("ParseKind(jobs) = %v, %v", k, err)
	}
	one := parseJob(t, "kind: job\napiVersion: v4\nmetadata: {name: one}\nspec: {template: {spec: {containers: [{image: busybox}]}}}\n")
	if s := one.Spec.Settings(); s.Completions != 1 || s.Parallelism != 1 || s.Indexed || one.Spec.CompletionMode != CompletionNonIndexed {
		t.Errorf("defaults %+v", s)
	}
}

func jobWith(t *testing.T, mutate func(j *Job)) Object {
	j := parseJob(t, jobDoc)
	mutate(j)
	return j
}

func intp(n int) *int { return &n }

// Every bound of a job's spec is refused with its field named.
func TestJobRules(t *testing.T) {
	const rules = "spec.podFailurePolicy.rules"
	manyRules := make([]PodFailureRule, MaxFailureRules+1)
	manyCodes := make([]int, MaxFailureValues+1)
	runRules(t, []ruleCase{
		{"completions 0", jobWith(t, func(j *Job) { j.Spec.Completions = intp(0) }), "spec.completions", "between 1 and 100000"},
		{"completions huge", jobWith(t, func(j *Job) { j.Spec.Completions = intp(MaxCompletions + 1) }), "spec.completions", "between 1 and 100000"},
		{"parallelism negative", jobWith(t, func(j *Job) { j.Spec.Parallelism = intp(-1) }), "spec.parallelism", "between 0 and 100000"},
		{"parallelism huge", jobWith(t, func(j *Job) { j.Spec.Parallelism = intp(1 << 40) }), "spec.parallelism", "between 0 and 100000"},
		{"backoffLimit negative", jobWith(t, func(j *Job) { j.Spec.BackoffLimit = intp(-1) }), "spec.backoffLimit", "between 0 and 10000"},
		{"backoffLimit huge", jobWith(t, func(j *Job) { j.Spec.BackoffLimit = intp(MaxBackoffLimit + 1) }), "spec.backoffLimit", "between 0 and 10000"},
		{"mode", jobWith(t, func(j *Job) { j.Spec.CompletionMode = "Sometimes" }), "spec.completionMode", "must be one of"},
		{"deadline negative", jobWith(t, func(j *Job) { j.Spec.ActiveDeadlineSeconds = -5 }), "spec.activeDeadlineSeconds", "between 1 and"},
		{"deadline huge", jobWith(t, func(j *Job) { j.Spec.ActiveDeadlineSeconds = MaxJobDeadline + 1 }), "spec.activeDeadlineSeconds", "between 1 and"},
		{"ttl negative", jobWith(t, func(j *Job) { j.Spec.TTLSecondsAfterFinished = intp(-1) }), "spec.ttlSecondsAfterFinished", "between 0 and"},
		{"no tasks", jobWith(t, func(j *Job) { j.Spec.Template.Spec.Processes = nil }), "spec.template.spec.containers", "required"},
		{"process without command", jobWith(t, func(j *Job) { j.Spec.Template.Spec.Processes[0].StartCmd = "" }), "spec.template.spec.processes[0].startCmd", ""},
		{"bad action", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].Action = "Retry" }), rules + "[0].action", "must be one of"},
		{"no exit codes", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes = nil }), rules + "[0].onExitCodes", "required"},
		{"bad operator", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Operator = "Gt" }), rules + "[0].onExitCodes.operator", "must be one of"},
		{"empty values", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = nil }), rules + "[0].onExitCodes.values", "at least one"},
		{"code out of range", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = []int{256} }), rules + "[0].onExitCodes.values[0]", "0-255"},
		{"In 0", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = []int{0} }), rules + "[0].onExitCodes.values[0]", "0 is success"},
		{"duplicate", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = []int{3, 3} }), rules + "[0].onExitCodes.values[1]", "duplicate"},
		{"unknown task", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[1].OnExitCodes.ContainerName = "ghost" }), rules + "[1].onExitCodes.containerName", "names no task"},
		{"too many rules", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules = manyRules }), rules, "at most 20 rules"},
		{"too many codes", jobWith(t, func(j *Job) { j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = manyCodes }), rules + "[0].onExitCodes.values", "at most 255"},
		{"name", jobWith(t, func(j *Job) { j.Metadata.Name = "Train.v1" }), "metadata.name", ""},
		{"grace", jobWith(t, func(j *Job) { j.KillPolicy.GracePeriod = -1 }), "killPolicy.gracePeriod", "negative"},
	})
	if errs := Validate(parseJob(t, jobDoc)); len(errs) > 0 {
		t.Errorf("the valid job: %v", errs)
	}
}

// A key a job does not have is refused under validate=strict (a restartPolicy: a job's runs are
// never restarted in place), and a user's status is dropped.
func TestJobDecodeRefusals(t *testing.T) {
	_, err := ParseValidated([]byte(strings.Replace(jobDoc, "spec:\n", "restartPolicy: {policy: Always}\nspec:\n", 1)), ValidateStrict)
	var fe FieldErrors
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "restartPolicy") {
		t.Errorf("restartPolicy on a job: %v", err)
	}
	j := parseJob(t, jobDoc+"status: {succeeded: 20, phase: Complete}\n")
	if j.Status.Succeeded != 0 || j.Status.Phase != "" {
		t.Errorf("a user's status was kept: %+v", j.Status)
	}
}

func TestIndexRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{1, 3, 4, 5, 7}, "1,3-5,7"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{2, 4}, "2,4"}} {
		if got := IndexRanges(tc.in); got != tc.want {
			t.Errorf("IndexRanges(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
