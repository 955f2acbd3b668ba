package v4

// A workflow step is an ordinary task group whose spec carries a StepIO: what the agent
// stages into the pod before its tasks start and collects from it after its main task
// exits (docs/workflows.md, "Inputs and outputs"). No wait container and no API call
// from inside the step: the agent does both, with bounds, and reports a StepResult in
// the task group's status, which the workflow controller copies into the node.

// Bounds of a step's outputs: a step over one fails with a reason and writes nothing
// more, so no workflow fills etcd or a server's memory.
const (
	// MaxStepParameterBytes bounds one output parameter (a file's content or stdout).
	MaxStepParameterBytes = 256 << 10
	// MaxStepOutputBytes bounds all of a step's output parameters and result together.
	MaxStepOutputBytes = 1 << 20
	// MaxStepArtifactBytes bounds one artifact as stored (compressed), by default.
	MaxStepArtifactBytes = 1 << 30
)

// StepIO is what the agent does around a workflow step (TaskGroupSpec.Step).
type StepIO struct {
	// Workflow is the workflow's name (its namespace is the task group's); NodeID the
	// node this task group runs (stable across leaders: internal/workflow/engine).
	Workflow string `json:"workflow"`
	NodeID   string `json:"nodeID"`
	// Main names the task whose end ends the step: the pod's other tasks (sidecars) are
	// stopped once it has exited and the outputs are collected.
	Main string `json:"main"`
	// Inputs are staged, in order, before any task of the pod starts; a failure fails
	// the step (Error phase) with the input named.
	Inputs []StepInput `json:"inputs,omitempty"`
	// Parameters are read from files of the main task after it exits.
	Parameters []StepParameter `json:"parameters,omitempty"`
	// Result asks for the main task's standard output as outputs.result (bounded by
	// MaxStepParameterBytes; its last bytes are kept when it is longer, and the step
	// fails only if a parameter needs it whole: StdoutParameter).
	Result bool `json:"result,omitempty"`
	// StdoutParameter names an output parameter whose value is the whole standard
	// output; longer than MaxStepParameterBytes fails the step.
	StdoutParameter string `json:"stdoutParameter,omitempty"`
	// Artifacts are collected from the main task after it exits (a file or a
	// directory, as a gzipped tar) and stored in the repository at the key given.
	Artifacts []StepOutputArtifact `json:"artifacts,omitempty"`
	// LogsKey, when set, is where the main task's log is stored as an artifact
	// ("main-logs") once the step ends, so it outlives the task group.
	LogsKey string `json:"logsKey,omitempty"`
}

// StepInput is one input artifact: exactly one of Key, Raw, HTTP and Git is set.
type StepInput struct {
	Name string `json:"name"`
	// Path is where it goes in the main task: in a container's filesystem; for a process
	// task, under the task's work directory (the path is taken as relative to it).
	Path string `json:"path"`
	// Mode is the mode of a staged file (0: 0644).
	Mode     int  `json:"mode,omitempty"`
	Optional bool `json:"optional,omitempty"`
	// Key is an artifact stored in the repository Repository ("" the cluster's default).
	Key        string `json:"key,omitempty"`
	Repository string `json:"repository,omitempty"`
	// Raw is inline content (a script's source, a raw artifact).
	Raw *string `json:"raw,omitempty"`
	// HTTP fetches a URL with GET.
	HTTP *WfHTTPArtifact `json:"http,omitempty"`
	// Git clones a repository at a revision.
	Git *WfGitArtifact `json:"git,omitempty"`
}

// StepParameter is an output parameter read from a file of the main task.
type StepParameter struct {
	Name string `json:"name"`
	// Path is the file (as StepInput.Path).
	Path string `json:"path"`
	// Default is the value when the file does not exist; without one a missing file
	// fails the step.
	Default *string `json:"default,omitempty"`
}

// StepOutputArtifact is an output artifact to collect.
type StepOutputArtifact struct {
	Name string `json:"name"`
	// Path is the file or directory (as StepInput.Path).
	Path     string `json:"path"`
	Optional bool   `json:"optional,omitempty"`
	// Repository ("" the cluster's default) and Key say where to store it; the
	// controller chooses keys under the workflow's own prefix.
	Repository string `json:"repository,omitempty"`
	Key        string `json:"key"`
}

// StepResult is what the agent collected (TaskGroupStatus.Step), set once the main task
// has exited and the outputs are collected (or failed to be).
type StepResult struct {
	// Collected is true once collection ended (successfully or not): the controller
	// waits for it before it takes the step's outputs.
	Collected bool `json:"collected,omitempty"`
	// ExitCode is the main task's.
	ExitCode   int              `json:"exitCode"`
	Parameters []WfParameter    `json:"parameters,omitempty"`
	Result     *string          `json:"result,omitempty"`
	Artifacts  []StoredArtifact `json:"artifacts,omitempty"`
	Logs       *StoredArtifact  `json:"logs,omitempty"`
	// Error says why staging or collection failed ("output parameter model: 300000
	// bytes, more than 262144"); the step fails with it.
	Error string `json:"error,omitempty"`
}

// StoredArtifact is an artifact in a repository.
type StoredArtifact struct {
	Name       string `json:"name"`
	Repository string `json:"repository,omitempty"`
	Key        string `json:"key"`
	// Size is the stored (compressed) size; Digest "sha256:<hex>" of the stored bytes.
	Size   int64  `json:"size"`
	Digest string `json:"digest,omitempty"`
}

// WfHTTPArtifact is an input artifact fetched over HTTP(S) with GET.
type WfHTTPArtifact struct {
	URL string `json:"url"`
	// Headers are sent with the request (no secrets: use a berth secret reference when
	// that comes).
	Headers []WfHTTPHeader `json:"headers,omitempty"`
}

// WfHTTPHeader is one header of an HTTP artifact.
type WfHTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// WfGitArtifact is an input artifact cloned from a git repository.
type WfGitArtifact struct {
	Repo string `json:"repo"`
	// Revision is a branch, tag or commit ("" the default branch).
	Revision string `json:"revision,omitempty"`
	// Depth > 0 makes a shallow clone.
	Depth int `json:"depth,omitempty"`
}
