package v4

import (
	"strconv"
	"strings"
	"time"
)

// KindJob names jobs: a pod template run to completion a number of times, Kubernetes'
// Job in berth's spec style (docs/jobs.md).
const KindJob Kind = "job"

// Completion modes of a job.
const (
	// CompletionNonIndexed: the job is complete after spec.completions successful runs.
	CompletionNonIndexed = "NonIndexed"
	// CompletionIndexed: each run gets an index 0..completions-1 (BERTH_JOB_INDEX) and the
	// job is complete when every index succeeded once.
	CompletionIndexed = "Indexed"
)

// Actions of a pod failure policy rule.
const (
	FailureFailJob = "FailJob" // the job fails at once
	FailureIgnore  = "Ignore"  // the failure does not count against backoffLimit: the run is replaced
	FailureCount   = "Count"   // the failure counts against backoffLimit, as with no rule
)

// Operators of a pod failure policy rule's exit code match.
const (
	OperatorIn    = "In"
	OperatorNotIn = "NotIn"
)

// Job conditions and phases.
const (
	JobComplete  = "Complete"
	JobFailed    = "Failed"
	JobRunning   = "Running"
	JobPending   = "Pending"
	JobSuspended = "Suspended"
)

// Reasons of a Failed condition.
const (
	ReasonBackoffLimit     = "BackoffLimitExceeded"
	ReasonDeadline         = "DeadlineExceeded"
	ReasonFailurePolicy    = "PodFailurePolicy"
	ReasonCompletionsReach = "CompletionsReached"
)

// Defaults and bounds of a job's spec.
const (
	DefaultBackoffLimit = 6
	MaxCompletions      = 100000
	MaxParallelism      = 100000
	MaxBackoffLimit     = 10000
	// MaxJobDeadline bounds activeDeadlineSeconds and ttlSecondsAfterFinished (a year).
	MaxJobDeadline = 365 * 24 * 3600
	// MaxFailureRules bounds podFailurePolicy.rules, MaxFailureValues the exit codes of one.
	MaxFailureRules  = 20
	MaxFailureValues = 255
	// MaxJobRecords bounds status.finished: the runs that ended most recently.
	MaxJobRecords = 50
	// MaxRecordMessage bounds the message of one record.
	MaxRecordMessage = 512
)

// Job runs its template to completion (kind "job").
type Job struct {
	TypeMeta
	Metadata   ObjectMeta  `json:"metadata"`
	KillPolicy *KillPolicy `json:"killPolicy,omitempty"`
	Constraint *Constraint `json:"constraint,omitempty"`
	Spec       JobSpec     `json:"spec"`
	// Status is written by berth's job controller; what users send is ignored.
	Status JobStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (j *Job) GetMeta() *ObjectMeta { return &j.Metadata }

// JobSpec is what a job runs and how often. Pointers tell a field left out (defaulted)
// from one set to 0.
type JobSpec struct {
	Template PodTemplate `json:"template"`
	// Scheduling names the priority class (docs/policy.md, "Priorities and preemption").
	Scheduling
	// Completions is how many runs must succeed (default 1).
	Completions *int `json:"completions,omitempty"`
	// Parallelism is how many runs may be active at once (default 1; 0 runs none).
	Parallelism *int `json:"parallelism,omitempty"`
	// CompletionMode is NonIndexed (default) or Indexed.
	CompletionMode string `json:"completionMode,omitempty"`
	// BackoffLimit is how many counted failures the job tolerates (default 6): one more
	// fails it.
	BackoffLimit *int `json:"backoffLimit,omitempty"`
	// PodFailurePolicy decides by exit code what a failed run does to the job.
	PodFailurePolicy *PodFailurePolicy `json:"podFailurePolicy,omitempty"`
	// ActiveDeadlineSeconds bounds the job's run time from its start; past it the job
	// fails and its active runs are stopped. 0 or absent: no deadline.
	ActiveDeadlineSeconds int `json:"activeDeadlineSeconds,omitempty"`
	// TTLSecondsAfterFinished, when set, deletes the job (and its task groups) that long
	// after it completed or failed.
	TTLSecondsAfterFinished *int `json:"ttlSecondsAfterFinished,omitempty"`
	// Suspend stops the active runs and starts none until it is unset.
	Suspend bool `json:"suspend,omitempty"`
}

// PodFailurePolicy lists rules matched in order against a failed run's exit codes.
type PodFailurePolicy struct {
	Rules []PodFailureRule `json:"rules"`
}

// PodFailureRule is one rule: the first that matches a failed run decides.
type PodFailureRule struct {
	Action      string               `json:"action"`
	OnExitCodes *ExitCodeRequirement `json:"onExitCodes"`
}

// ExitCodeRequirement matches a run when one of its main tasks exited with a non-zero
// code In (or NotIn) Values. ContainerName, when set, looks at that task only.
type ExitCodeRequirement struct {
	ContainerName string `json:"containerName,omitempty"`
	Operator      string `json:"operator"`
	Values        []int  `json:"values"`
}

// Matches reports whether exit code c satisfies the requirement.
func (r *ExitCodeRequirement) Matches(c int) bool {
	in := false
	for _, v := range r.Values {
		in = in || v == c
	}
	if r.Operator == OperatorNotIn {
		return !in
	}
	return in
}

// JobStatus is what the job controller reports.
type JobStatus struct {
	// Phase is Pending, Running, Suspended, Complete or Failed.
	Phase string `json:"phase,omitempty"`
	// Active counts runs not yet ended, Succeeded the runs that succeeded, Failed the
	// failures counted against backoffLimit.
	Active    int `json:"active"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Ignored counts failures a policy rule ignored (they were replaced).
	Ignored int `json:"ignored,omitempty"`
	// CompletedIndexes lists the succeeded indexes of an Indexed job, "1,3-5,7".
	CompletedIndexes string         `json:"completedIndexes,omitempty"`
	Conditions       []JobCondition `json:"conditions,omitempty"`
	StartTime        time.Time      `json:"startTime,omitzero"`
	CompletionTime   time.Time      `json:"completionTime,omitzero"`
	Message          string         `json:"message,omitempty"`
	// Finished are the runs that ended most recently (at most MaxJobRecords).
	Finished []JobRunRecord `json:"finished,omitempty"`
	// Nominated are the runs waiting for the victims of their preemption to stop
	// (docs/policy.md, "Priorities and preemption").
	Nominated []Nomination `json:"nominated,omitempty"`
}

// JobCondition is a state the job reached: Complete, Failed or Suspended.
type JobCondition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"` // "True" or "False"
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"lastTransitionTime,omitzero"`
}

// JobRunRecord is one ended run of a job.
type JobRunRecord struct {
	TaskGroup string `json:"taskgroup"`
	Index     int    `json:"index"`
	Attempt   int    `json:"attempt"`
	Node      string `json:"node,omitempty"`
	// Result is Succeeded, Failed, Ignored or Stopped.
	Result     string    `json:"result"`
	ExitCode   int       `json:"exitCode"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Message is the agent's word on how it ended (bounded).
	Message string `json:"message,omitempty"`
}

// Condition returns the job's condition of type typ that is True, or nil.
func (s *JobStatus) Condition(typ string) *JobCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ && s.Conditions[i].Status == "True" {
			return &s.Conditions[i]
		}
	}
	return nil
}

// Done reports whether the job completed or failed.
func (s *JobStatus) Done() bool {
	return s.Condition(JobComplete) != nil || s.Condition(JobFailed) != nil
}

// JobSettings are a job's spec values with the defaults applied.
type JobSettings struct {
	Completions, Parallelism, BackoffLimit int
	Indexed                                bool
}

// Settings returns the spec's values, defaults filled in.
func (s *JobSpec) Settings() JobSettings {
	out := JobSettings{Completions: 1, Parallelism: 1, BackoffLimit: DefaultBackoffLimit, Indexed: s.CompletionMode == CompletionIndexed}
	if s.Completions != nil {
		out.Completions = *s.Completions
	}
	if s.Parallelism != nil {
		out.Parallelism = *s.Parallelism
	}
	if s.BackoffLimit != nil {
		out.BackoffLimit = *s.BackoffLimit
	}
	return out
}

// IndexRanges writes sorted, distinct indexes as Kubernetes' completedIndexes: "1,3-5,7".
func IndexRanges(sorted []int) string {
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sorted[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sorted[j]))
		}
		i = j + 1
	}
	return b.String()
}
