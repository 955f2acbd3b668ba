package v4

// Workflows are Argo's model in berth's spec style (docs/workflows.md): a workflow names an
// entrypoint among its templates; a template runs something (a container, a process, a
// script), orders other templates (steps, dag) or waits (suspend). A workflowtemplate
// holds templates that workflows call by templateRef.
const (
	KindWorkflow         Kind = "workflow"
	KindWorkflowTemplate Kind = "workflowtemplate"
)

// Workflow is a workflow object (kind "workflow").
type Workflow struct {
	TypeMeta
	Metadata ObjectMeta   `json:"metadata"`
	Spec     WorkflowSpec `json:"spec"`
	// Status is written by berth; what users send is ignored.
	Status WorkflowStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (w *Workflow) GetMeta() *ObjectMeta { return &w.Metadata }

// WorkflowTemplate is a library of templates (kind "workflowtemplate"); its entrypoint
// and arguments are the defaults of a workflow made from it.
type WorkflowTemplate struct {
	TypeMeta
	Metadata ObjectMeta   `json:"metadata"`
	Spec     WorkflowSpec `json:"spec"`
}

// GetMeta returns the object's metadata.
func (w *WorkflowTemplate) GetMeta() *ObjectMeta { return &w.Metadata }

// WorkflowSpec is what a workflow runs.
type WorkflowSpec struct {
	// Entrypoint names the template the workflow starts with.
	Entrypoint string       `json:"entrypoint,omitempty"`
	Arguments  *WfArguments `json:"arguments,omitempty"`
	Templates  []WfTemplate `json:"templates,omitempty"`
	// OnExit names a template run when the workflow ends, whatever its phase
	// ({{workflow.status}} says which).
	OnExit string `json:"onExit,omitempty"`
	// Parallelism bounds the steps running at once in the workflow (0: no bound).
	Parallelism int `json:"parallelism,omitempty"`
	// ActiveDeadlineSeconds fails the workflow once it has run this long (0: none).
	ActiveDeadlineSeconds int64 `json:"activeDeadlineSeconds,omitempty"`
	// Suspend holds the workflow: no new step starts until it is false again.
	Suspend bool `json:"suspend,omitempty"`
	// Constraint places every step whose template has none (an application's
	// constraint: docs/scheduling.md).
	Constraint *Constraint `json:"constraint,omitempty"`
	// Shutdown ends a running workflow: Stop stops its steps and runs its exit handler,
	// Terminate stops everything (Argo's spec.shutdown; `berth workflow stop|terminate`).
	Shutdown string `json:"shutdown,omitempty"`
	// PodGC says when the steps' task groups are deleted (default: once the workflow
	// ended); TTLStrategy when the finished workflow itself is.
	PodGC       *WfPodGC       `json:"podGC,omitempty"`
	TTLStrategy *WfTTLStrategy `json:"ttlStrategy,omitempty"`
	// Scheduling names the priority class of every step and asks for the revocable
	// tier (docs/workflows.md, "Priority and tier"); its disruptionBudget is refused:
	// steps are never preemption victims.
	Scheduling
	// PodPriorityClassName is Argo's spelling of spec.priorityClassName; Default moves
	// it there.
	PodPriorityClassName string `json:"podPriorityClassName,omitempty"`
}

// The values of WorkflowSpec.Shutdown.
const (
	ShutdownStop      = "Stop"
	ShutdownTerminate = "Terminate"
)

// WfArguments are the values passed to a workflow or to a called template.
type WfArguments struct {
	Parameters []WfParameter `json:"parameters,omitempty"`
	Artifacts  []WfArtifact  `json:"artifacts,omitempty"`
}

// WfInputs are what a template takes.
type WfInputs struct {
	Parameters []WfParameter `json:"parameters,omitempty"`
	Artifacts  []WfArtifact  `json:"artifacts,omitempty"`
}

// WfOutputs are what a template gives: parameters read after its main task exits,
// artifacts collected from its paths.
type WfOutputs struct {
	Parameters []WfParameter `json:"parameters,omitempty"`
	Artifacts  []WfArtifact  `json:"artifacts,omitempty"`
	// Result is a script's or task's standard output (bounded), set in node statuses.
	Result *string `json:"result,omitempty"`
	// ExitCode is the main task's exit code, set in node statuses.
	ExitCode *int `json:"exitCode,omitempty"`
}

// WfParameter is a named string value.
type WfParameter struct {
	Name string `json:"name"`
	// Value is the value given (arguments) or the value got (node statuses).
	Value *string `json:"value,omitempty"`
	// Default is an input's value when no argument gives one.
	Default *string `json:"default,omitempty"`
	// Enum lists the values an argument may take.
	Enum []string `json:"enum,omitempty"`
	// ValueFrom says where an output's value comes from.
	ValueFrom *WfValueFrom `json:"valueFrom,omitempty"`
	// Description is for people.
	Description string `json:"description,omitempty"`
}

// WfValueFrom is the source of an output parameter: exactly one field is set.
type WfValueFrom struct {
	// Path is a file in the task whose content is the value (read by the agent, bounded).
	Path string `json:"path,omitempty"`
	// Stdout takes the main task's standard output (bounded).
	Stdout bool `json:"stdout,omitempty"`
	// Expression is a `when`-style expression over parameters; its value is "true" or "false".
	Expression string `json:"expression,omitempty"`
	// Parameter is a "{{steps.X.outputs.parameters.Y}}" reference, for steps and dag
	// templates that pass on a child's output.
	Parameter string `json:"parameter,omitempty"`
	// Default is the value when the source gives none.
	Default *string `json:"default,omitempty"`
}

// WfArtifact is a named file or directory: staged into a task before it starts (inputs),
// collected from it after it exits (outputs) or passed on (arguments).
type WfArtifact struct {
	Name string `json:"name"`
	// Path is where the artifact is in the task.
	Path string `json:"path,omitempty"`
	// From is a "{{tasks.X.outputs.artifacts.Y}}" reference (arguments).
	From string `json:"from,omitempty"`
	// Repository names the artifactrepository where the artifact is kept; empty: the
	// namespace's default one, else the servers' embedded store (docs/workflows.md).
	Repository *WfArtifactRepositoryRef `json:"repository,omitempty"`
	// Optional lets a missing artifact pass.
	Optional bool `json:"optional,omitempty"`
	// Mode is the file mode of a staged file (0: 0644).
	Mode int `json:"mode,omitempty"`
	// Raw, HTTP and Git are sources of an input artifact other than the repository
	// (at most one is set, and not with From).
	Raw  *WfRawArtifact  `json:"raw,omitempty"`
	HTTP *WfHTTPArtifact `json:"http,omitempty"`
	Git  *WfGitArtifact  `json:"git,omitempty"`
}

// WfRawArtifact is an input artifact given inline.
type WfRawArtifact struct {
	Data string `json:"data"`
}

// WfArtifactRepositoryRef names an artifact repository and a key in it.
type WfArtifactRepositoryRef struct {
	Name string `json:"name,omitempty"`
	Key  string `json:"key,omitempty"`
}

// The types of templates, one of which a template has.
const (
	WfTypeContainer = "Container"
	WfTypeProcess   = "Process"
	WfTypeScript    = "Script"
	WfTypeSteps     = "Steps"
	WfTypeDAG       = "DAG"
	WfTypeSuspend   = "Suspend"
)

// WfTemplate is one template: exactly one of Container, Process, Script, Steps, DAG,
// Suspend and Resource is set.
type WfTemplate struct {
	Name    string     `json:"name"`
	Inputs  *WfInputs  `json:"inputs,omitempty"`
	Outputs *WfOutputs `json:"outputs,omitempty"`
	// Container runs berth's container task (docs/spec.md).
	Container *Container `json:"container,omitempty"`
	// Process runs berth's process task on the node (docs/process.md).
	Process *ProcessTask `json:"process,omitempty"`
	Script  *WfScript    `json:"script,omitempty"`
	// Steps are groups run one after another; the steps of a group run in parallel.
	Steps [][]WfStep `json:"steps,omitempty"`
	DAG   *WfDAG     `json:"dag,omitempty"`
	// Suspend waits until resumed or for its duration.
	Suspend *WfSuspend `json:"suspend,omitempty"`
	// Resource creates, applies or deletes one object of the namespace
	// (workflow_resource.go).
	Resource      *WfResource      `json:"resource,omitempty"`
	RetryStrategy *WfRetryStrategy `json:"retryStrategy,omitempty"`
	// ActiveDeadlineSeconds fails one attempt of the template once it has run this long.
	ActiveDeadlineSeconds int64 `json:"activeDeadlineSeconds,omitempty"`
	// Parallelism bounds the children of a steps or dag template running at once.
	Parallelism int `json:"parallelism,omitempty"`
	// Constraint places the steps of a container, process or script template (an
	// application's constraint: docs/scheduling.md); nil: the workflow's.
	Constraint *Constraint `json:"constraint,omitempty"`
}

// Type says which kind of template t is ("" when none or more than one is set).
func (t *WfTemplate) Type() string {
	typ, n := "", 0
	for _, c := range []struct {
		set bool
		typ string
	}{{t.Container != nil, WfTypeContainer}, {t.Process != nil, WfTypeProcess}, {t.Script != nil, WfTypeScript},
		{t.Steps != nil, WfTypeSteps}, {t.DAG != nil, WfTypeDAG}, {t.Suspend != nil, WfTypeSuspend},
		{t.Resource != nil, WfTypeResource}} {
		if c.set {
			typ, n = c.typ, n+1
		}
	}
	if n != 1 {
		return ""
	}
	return typ
}

// WfScript runs Source with an interpreter: in a container of Image, or on the node (a
// process task) when Image is empty.
type WfScript struct {
	Source string `json:"source"`
	// Image is the container image holding the interpreter; empty runs it on the node.
	Image string `json:"image,omitempty"`
	// Command is the interpreter and its arguments ("python3"); the source file is appended.
	Command []string `json:"command"`
	Env     []EnvVar `json:"env,omitempty"`
	// Resources are the task's as for a container or process.
	Resources *Resources `json:"resources,omitempty"`
}

// WfSuspend waits: for Duration ("30s", "5m"), or until resumed when it is empty.
type WfSuspend struct {
	Duration string `json:"duration,omitempty"`
}

// WfDAG is a graph of tasks, each started once its dependencies allow.
type WfDAG struct {
	Tasks []WfDAGTask `json:"tasks"`
}

// WfStep is a call of a template from a steps template.
type WfStep struct {
	Name string `json:"name"`
	// Template names a template of the workflow; TemplateRef one of a workflowtemplate.
	Template    string         `json:"template,omitempty"`
	TemplateRef *WfTemplateRef `json:"templateRef,omitempty"`
	Arguments   *WfArguments   `json:"arguments,omitempty"`
	// When is a condition; false skips the step.
	When string `json:"when,omitempty"`
	// WithItems, WithParam and WithSequence run the step once per item ({{item}}).
	WithItems    []WfItem      `json:"withItems,omitempty"`
	WithParam    string        `json:"withParam,omitempty"`
	WithSequence *WfSequence   `json:"withSequence,omitempty"`
	OnExit       string        `json:"onExit,omitempty"`
	ContinueOn   *WfContinueOn `json:"continueOn,omitempty"`
}

// WfDAGTask is a call of a template from a dag template.
type WfDAGTask struct {
	WfStep
	// Dependencies names tasks that must succeed first; Depends is an expression on their
	// results ("A && (B.Failed || C.Succeeded)"). At most one of the two is set.
	Dependencies []string `json:"dependencies,omitempty"`
	Depends      string   `json:"depends,omitempty"`
}

// WfTemplateRef names a template of a workflowtemplate in the workflow's namespace.
type WfTemplateRef struct {
	Name     string `json:"name"`
	Template string `json:"template"`
}

// WfSequence is a range of numbers: Count from Start, or Start to End (inclusive),
// each formatted with Format (printf, "%02d"), as strings because they may be parameters.
type WfSequence struct {
	Count  string `json:"count,omitempty"`
	Start  string `json:"start,omitempty"`
	End    string `json:"end,omitempty"`
	Format string `json:"format,omitempty"`
}

// WfContinueOn lets the steps after a failed or errored step run.
type WfContinueOn struct {
	Failed bool `json:"failed,omitempty"`
	Error  bool `json:"error,omitempty"`
}

// The retry policies.
const (
	RetryOnFailure = "OnFailure" // the main task exited non-zero
	RetryOnError   = "OnError"   // berth failed to run it (placement, staging, a lost node)
	RetryAlways    = "Always"
)

// WfRetryStrategy retries a failed attempt of a template.
type WfRetryStrategy struct {
	// Limit is how many retries after the first attempt (nil: no bound but the backoff's).
	Limit       *int       `json:"limit,omitempty"`
	RetryPolicy string     `json:"retryPolicy,omitempty"`
	Backoff     *WfBackoff `json:"backoff,omitempty"`
}

// WfBackoff spaces retries: Duration, times Factor after each, no attempt started after
// MaxDuration since the first.
type WfBackoff struct {
	Duration    string  `json:"duration,omitempty"`
	Factor      float64 `json:"factor,omitempty"`
	MaxDuration string  `json:"maxDuration,omitempty"`
}
