package v4

import "time"

// Cronjobs and cronworkflows run a job or a workflow on a schedule (docs/cron.md):
// Kubernetes' CronJob and Argo's CronWorkflow in berth's spec style.
const (
	KindCronJob      Kind = "cronjob"
	KindCronWorkflow Kind = "cronworkflow"
)

// Concurrency policies: what a due run does while an earlier one still runs.
const (
	ConcurrencyAllow   = "Allow"   // it starts alongside
	ConcurrencyForbid  = "Forbid"  // it is skipped
	ConcurrencyReplace = "Replace" // the running ones are stopped (deleted) first
)

// Defaults and bounds of the schedule settings.
const (
	// Kubernetes' defaults for the finished runs kept.
	DefaultSuccessfulHistory = 3
	DefaultFailedHistory     = 1
	// MaxCronHistory bounds both history limits: the kept runs are listed on every pass.
	MaxCronHistory = 100
	// MaxCronNameLen bounds a cronjob's name so that a run's name, the name and a unix
	// time ("-1767225600"), is still a valid name of 63 characters (as Kubernetes does).
	MaxCronNameLen = 52
	// MaxCronActive bounds the active runs of one cron object (an Allow schedule whose
	// runs never end must not fill the store), and so status.active.
	MaxCronActive = 100
)

// Labels and annotations of the jobs and workflows a cron object creates: the label
// names the parent (so that the active list and the history are found again by a new
// leader), the annotation holds the time the run was scheduled for.
const (
	CronJobLabel            = "berth.io/cronjob"
	CronWorkflowLabel       = "berth.io/cronworkflow"
	ScheduledTimeAnnotation = "berth.io/scheduled-time"
)

// CronSchedule is when and how a cron object starts runs; cronjobs and cronworkflows
// share it (inline in their spec).
type CronSchedule struct {
	// Schedule is five cron fields, an `@daily`-style shortcut or `@every <duration>`.
	Schedule string `json:"schedule"`
	// TimeZone is an IANA name the schedule is read in ("" is UTC; "Local" is refused).
	TimeZone string `json:"timeZone,omitempty"`
	// ConcurrencyPolicy is Allow (default), Forbid or Replace.
	ConcurrencyPolicy string `json:"concurrencyPolicy,omitempty"`
	// StartingDeadlineSeconds, when set, is how late a missed run may still start.
	StartingDeadlineSeconds *int `json:"startingDeadlineSeconds,omitempty"`
	// SuccessfulJobsHistoryLimit and FailedJobsHistoryLimit are how many finished runs
	// are kept (3 and 1 by default); older ones are deleted.
	SuccessfulJobsHistoryLimit *int `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int `json:"failedJobsHistoryLimit,omitempty"`
	// Suspend starts no run until it is unset; the running ones go on.
	Suspend bool `json:"suspend,omitempty"`
}

// CronJob runs a job on a schedule (kind "cronjob").
type CronJob struct {
	TypeMeta
	Metadata ObjectMeta  `json:"metadata"`
	Spec     CronJobSpec `json:"spec"`
	// Status is written by berth's cron controller; what users send is ignored.
	Status CronStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (c *CronJob) GetMeta() *ObjectMeta { return &c.Metadata }

// CronJobSpec is a schedule and the job each run creates.
type CronJobSpec struct {
	CronSchedule
	JobTemplate JobTemplate `json:"jobTemplate"`
}

// JobTemplate is the job a cronjob creates: its labels and annotations, and the job's
// kill policy, constraint and spec.
type JobTemplate struct {
	Metadata   *TemplateMeta `json:"metadata,omitempty"`
	KillPolicy *KillPolicy   `json:"killPolicy,omitempty"`
	Constraint *Constraint   `json:"constraint,omitempty"`
	Spec       JobSpec       `json:"spec"`
}

// CronWorkflow runs a workflow on a schedule (kind "cronworkflow").
type CronWorkflow struct {
	TypeMeta
	Metadata ObjectMeta       `json:"metadata"`
	Spec     CronWorkflowSpec `json:"spec"`
	Status   CronStatus       `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (c *CronWorkflow) GetMeta() *ObjectMeta { return &c.Metadata }

// CronWorkflowSpec is a schedule and the workflow each run creates (Argo's names).
type CronWorkflowSpec struct {
	CronSchedule
	WorkflowMetadata *TemplateMeta `json:"workflowMetadata,omitempty"`
	WorkflowSpec     WorkflowSpec  `json:"workflowSpec"`
}

// CronStatus is what the cron controller reports.
type CronStatus struct {
	// LastScheduleTime is the last time a run was scheduled for (and started, or found
	// started by an earlier leader); the controller moves it in the same transaction
	// that creates the run.
	LastScheduleTime time.Time `json:"lastScheduleTime,omitzero"`
	// LastSuccessfulTime is when the newest run that succeeded finished.
	LastSuccessfulTime time.Time `json:"lastSuccessfulTime,omitzero"`
	// Active are the runs not finished (at most MaxCronActive listed).
	Active []CronRun `json:"active,omitempty"`
	// Message says why the last due run did not start, if it did not.
	Message string `json:"message,omitempty"`
}

// CronRun is one job or workflow a cron object created.
type CronRun struct {
	Name string `json:"name"`
	// ScheduledTime is the time the run was scheduled for; zero for a manual trigger.
	ScheduledTime time.Time `json:"scheduledTime,omitzero"`
}

// CronParts returns the schedule and the status of a cronjob or a cronworkflow, and
// the kind of the runs it creates; ok is false for other objects.
func CronParts(o Object) (sched *CronSchedule, st *CronStatus, child Kind, ok bool) {
	switch c := o.(type) {
	case *CronJob:
		return &c.Spec.CronSchedule, &c.Status, KindJob, true
	case *CronWorkflow:
		return &c.Spec.CronSchedule, &c.Status, KindWorkflow, true
	}
	return nil, nil, "", false
}

// CronLabel is the label that names a run's parent of kind k.
func CronLabel(k Kind) string {
	if k == KindCronWorkflow {
		return CronWorkflowLabel
	}
	return CronJobLabel
}

// HistoryLimits returns how many succeeded and failed runs are kept, defaults applied.
func (s *CronSchedule) HistoryLimits() (succeeded, failed int) {
	succeeded, failed = DefaultSuccessfulHistory, DefaultFailedHistory
	if s.SuccessfulJobsHistoryLimit != nil {
		succeeded = *s.SuccessfulJobsHistoryLimit
	}
	if s.FailedJobsHistoryLimit != nil {
		failed = *s.FailedJobsHistoryLimit
	}
	return succeeded, failed
}
