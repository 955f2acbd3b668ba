// Package driver defines how the executor runs tasks: a Driver starts, watches, stops and
// lists the tasks of one runtime (plain processes, Docker containers). Drivers live in
// subpackages (process, docker, fake); the executor gives pod semantics on top.
package driver

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// ErrNotFound is returned for a task ID the driver does not know.
var ErrNotFound = errors.New("task not found")

// Labels every task carries, so an agent that restarts can adopt what runs (List).
const (
	LabelTaskGroup = "berth.taskgroup" // namespace/name of the task group
	LabelTask      = "berth.task"      // task name within the group
	LabelNode      = "berth.node"      // node name
	LabelVersion   = "berth.version"   // owner resourceVersion of the template
	// LabelCluster is the ID of the cluster whose agent started the task (owner.go).
	LabelCluster = "berth.cluster"
)

// Task is one task (a process or a container) as the executor asks a driver to run it.
// Strings are already rendered: ${...} variables are substituted.
type Task struct {
	// ID is unique on the node and stable for the life of the task group:
	// "{namespace}.{taskgroup name}.{task name}".
	ID     string
	Name   string
	Labels map[string]string

	// Exactly one of Process and Container is set.
	Process   *v4.ProcessTask
	Container *v4.Container

	// Env is the task's environment in order, as NAME=value (PORT_<name>, BCS_* and the
	// spec's env, with configmap and secret items resolved).
	Env []string
	// Ports are the host ports the task holds.
	Ports []v4.AllocatedPort
	// Files are configmap/secret items injected as files: path -> content and mode.
	Files []File
	// Links are a process's pod volumes (docs/pods.md, "Volumes"): a symlink in its
	// work dir to each volume's directory, which the process driver makes before the
	// start. Containers get their pod volumes as Setup.Volumes.
	Links []Link

	// WorkBaseDir and RunBaseDir are the pod's ${work_base_dir} and ${run_base_dir}
	// (created by the executor); LogDir receives the task's stdout and stderr.
	WorkBaseDir string
	RunBaseDir  string
	LogDir      string

	// Limits: CPU in cores and memory in MB; 0 or less is unlimited.
	CPULimit    float64
	MemoryLimit float64
	// CPURequest (cores) gives the task's cpu weight (CPUShares), unless Revocable.
	CPURequest float64
	// Revocable marks a task of a revocable task group (docs/policy.md, "Revocable
	// capacity"): it runs with the lowest cpu weight, whatever its request.
	Revocable bool

	// KillGrace is how long Stop waits after the polite stop before SIGKILL.
	KillGrace time.Duration

	// GPUs are the cards (or shares of one) the scheduler gave the task; the executor has
	// put them in its env (docs/gpus.md). The Docker driver also gives the container their
	// device nodes and the driver's files.
	GPUs []GPU

	// Setup is set with Container: what the executor decided for the container besides
	// its spec. A process task has none.
	Setup *ContainerSetup

	// RunToEnd marks a task that is meant to end (an init task): Start returns once it
	// started, without a process's startGracePeriod and checks, and an end right after
	// the start is its result (Wait delivers it), not a failed start.
	RunToEnd bool
}

// Link is a symlink at Path, relative to a process's work dir, to the directory Target
// (one of the agent's, which the executor names).
type Link struct {
	Path   string
	Target string
	// Give hands Target, a directory the agent made root's and closed (an emptyDir whose
	// tasks' user the executor cannot know: a process of a uid the driver picks), to the
	// task's user, 0700, unless it is that user's already.
	Give bool
}

// WithSetup returns t, or a copy with an empty Setup when it has none: a container the
// executor decided nothing for gets the runtime's defaults.
func (t *Task) WithSetup() *Task {
	if t.Setup != nil {
		return t
	}
	c := *t
	c.Setup = &ContainerSetup{}
	return &c
}

// ContainerSetup is what a container gets besides its spec: its network and host name
// (BCS's pod semantics, decided by the executor: docs/agent.md, Container pods), and
// the mounts, devices and namespaces its cards and devices need.
type ContainerSetup struct {
	// NetworkMode is HOST, BRIDGE, NONE, a user network name (USER mode, from the "net"
	// parameter) or empty when the task joins another's network (JoinTask).
	NetworkMode string
	// JoinTask is the ID of the task (the pod's first container) or of the pod network
	// sandbox (CNI) whose network namespace this container shares: --net=container:<id>.
	JoinTask string
	// PortBindings are the pod's port mappings, all on the container that owns the network
	// (the first one); empty for the others.
	PortBindings []PortBinding
	// Hostname is the container's host name (empty: Docker's default).
	Hostname string
	// Volumes are host paths mounted into the container.
	Volumes []Mount
	// OwnedFiles are host files inside Volumes that the driver gives to the container's
	// user, as it does the task's configmap and secret files: a vcuda share's socket,
	// 0660, which only its owner may call.
	OwnedFiles []string
	// DNS, when set, is the container's resolver (the node's cluster DNS server); the
	// spec's own dns parameters win over it.
	DNS *DNS
	// GPUDriverDir, when set, is mounted read-only at /usr/local/nvidia in place of the
	// driver's files (the vcuda sharing mode's driver with its libcuda-control.so).
	GPUDriverDir string
	// IPCHost runs the container in the host's IPC namespace (an MPS client's).
	IPCHost bool
	// Devices are device nodes given to the container (a device plugin's Allocate);
	// CDIDevices are CDI device names, resolved by Docker's CDI support.
	Devices    []Device
	CDIDevices []string

	// Runtime is the runtime handler the pod asks for (spec.runtime, docs/runtimes.md),
	// empty for the node's default: a name the driver looks up among those its operator
	// declared, never a path. A name it does not have fails the start.
	Runtime string

	// PullAuth, when set, is what the image is pulled with (pull.go); without it the
	// container's imagePullUser/imagePullPasswd are.
	PullAuth *RegistryAuth
	// PullProgress, when set, is told how a pull of the image goes: called from Start,
	// it must not block.
	PullProgress func(PullEvent)
}

// Device is a host device node given to a container.
type Device struct {
	HostPath, ContainerPath string
	// Permissions are the cgroup's: "rw", "rwm", ... ("rwm" when empty).
	Permissions string
}

// GPU is one card given to a task, as the node knows it.
type GPU struct {
	UUID  string
	Index int
	// Minor names the card's device node, /dev/nvidia<minor>.
	Minor int
	// NUMANode is the card's NUMA node, -1 when unknown: CPUs bound to the task are taken
	// from it when it can.
	NUMANode int
	// Cores (hundredths, 100 for the whole card) and MemoryMiB are the task's share.
	Cores     int
	MemoryMiB int
}

// DNS is a container's resolver configuration.
type DNS struct {
	Servers []string
	Search  []string
	// Options are resolver options ("ndots:5").
	Options []string
}

// PortBinding publishes a container port on the host.
type PortBinding struct {
	Name          string
	ContainerPort int
	HostPort      int // 0: no mapping
	Protocol      string
}

// Mount binds a host path into a container.
type Mount struct {
	HostPath, ContainerPath string
	ReadOnly                bool
	// Propagation is the bind's mount propagation: "" (the runtime's default, private)
	// or PropagationRShared, both ways (a CSI plugin's view of the agent's data dir, where
	// its mounts must reach the node; the host path must be on a shared mount).
	Propagation string
}

// PropagationRShared propagates mounts between the host path and the container both
// ways, recursively.
const PropagationRShared = "rshared"

// PodNetworks is implemented by drivers that give a pod its own network through CNI: a
// small sandbox container is created, the CNI plugins are called on its namespace, and
// every task joins it (JoinTask = the sandbox ID).
type PodNetworks interface {
	// SetupPod creates the sandbox of pod id and runs CNI ADD; it returns the sandbox ID
	// and the pod's IP. Calling it again for a pod that has one returns the existing one.
	SetupPod(ctx context.Context, id string, labels map[string]string, ports []PortBinding) (sandboxID, ip string, err error)
	// TeardownPod runs CNI DEL and removes the sandbox, also when the sandbox container
	// was killed or removed behind berth's back.
	TeardownPod(ctx context.Context, id string) error
}

// CNIBridge is implemented by container drivers without a bridge of their own
// (containerd) that serve the BRIDGE network mode through PodNetworks: a BRIDGE pod gets
// a sandbox on the node's CNI network, whose IP is the pod's and which takes its port
// bindings (hostPort to containerPort, through the portmap plugin), as a CNI pod does.
type CNIBridge interface {
	BridgeThroughCNI() bool
}

// NetworkHolders is implemented by container drivers that can run a container that only
// holds a pod's network (Kubernetes' pause container), for a pod whose first task to
// start is an init task, which cannot own the network since it ends: HolderImage is its
// image, built on the node when missing. The holder is started as a task of the pod.
type NetworkHolders interface {
	HolderImage(ctx context.Context) (string, error)
}

// Processes is implemented by drivers that can list the host PIDs of a task's processes
// (the vcuda sharing mode writes them for the library that enforces a share).
type Processes interface {
	PIDs(ctx context.Context, id string) ([]int, error)
}

// Interactive is implemented by drivers that can attach a terminal to a command in a task
// (berth exec -it).
type Interactive interface {
	ExecInteractive(ctx context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (exitCode int, err error)
}

// FileReader is implemented by container drivers that can read a task's files once it
// exited (a workflow step's outputs), confined to the container's filesystem: a link
// the task made is resolved inside it, never on the node.
type FileReader interface {
	// ReadFiles streams path of task id's filesystem as a tar archive whose entries are
	// named from path's base name (as `docker cp` makes it); an error wrapping
	// fs.ErrNotExist when path does not exist.
	ReadFiles(ctx context.Context, id, path string) (io.ReadCloser, error)
}

// File is one file to write for a task before it starts.
type File struct {
	Path     string
	Content  []byte
	ReadOnly bool
	User     string // owner; empty keeps the agent's user
}

// State is what a driver knows of one task.
type State struct {
	ID     string
	Labels map[string]string
	// Running is true while the task runs; once false, Info says how it ended
	// (ExitCode, FinishAt, OOMKilled, Message).
	Running bool
	Info    v4.ContainerInfo
}

// ExecResult is the outcome of a command run in a task's context.
type ExecResult struct {
	ExitCode int
	Output   []byte
}

// LogOptions select what Logs returns.
type LogOptions struct {
	Follow bool // keep streaming until ctx ends
	Tail   int  // the last N lines only, of the stream(s) selected (0: all)
	// Stream is "stdout" or "stderr" for that stream alone; empty for both, in the order
	// they were written.
	Stream string
	// Timestamps prefixes each line with the time it was written (RFC 3339, nanoseconds,
	// UTC) and a space.
	Timestamps bool
}

// The streams LogOptions.Stream may name.
const (
	StreamStdout = v4.LogStreamStdout
	StreamStderr = v4.LogStreamStderr
)

// Driver runs tasks of one kind. Every method is safe for concurrent use; a task's
// processes or containers survive the agent (they are not its children in a way that
// kills them when it exits).
type Driver interface {
	// Name is the driver's kind: "process" or "docker".
	Name() string
	// Start prepares (downloads packages, pulls images, writes files) and starts the
	// task, and returns once it runs (processes: after startGracePeriod, with the pid
	// file checked). An error says what failed, with the HTTP status, user or path.
	// Starting an ID that exists is an error.
	Start(ctx context.Context, t *Task) (State, error)
	// Inspect returns the task's current state (ErrNotFound when unknown).
	Inspect(ctx context.Context, id string) (State, error)
	// Wait returns a channel that receives the task's state once it has ended (Running
	// false, with how it ended) and is then closed; a task that has already ended is
	// delivered at once. The end is learnt as it happens (Docker's event stream, a pidfd),
	// not by polling. When ctx ends first the channel is closed without a value; a task
	// removed meanwhile is delivered as Gone(). ErrNotFound when unknown.
	Wait(ctx context.Context, id string) (<-chan State, error)
	// Stop stops the task deliberately: the polite way first (stopCmd, docker stop),
	// then SIGKILL after grace. Stopping an ended task is not an error.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove forgets an ended task and releases what it held (cgroups, state). Its logs
	// stay readable until the executor removes the pod's directories.
	Remove(ctx context.Context, id string) error
	// List returns every task the driver knows, running or ended, with its labels.
	List(ctx context.Context) ([]State, error)
	// Exec runs a shell command in the task's context (its work dir and env for
	// processes, docker exec for containers) within ctx's deadline.
	Exec(ctx context.Context, id string, cmd string) (ExecResult, error)
	// Logs streams the task's output (stdout and stderr interleaved).
	Logs(ctx context.Context, id string, opts LogOptions) (io.ReadCloser, error)
	// Action runs "reload" or "restart" (a process's reloadCmd / restartCmd).
	Action(ctx context.Context, id string, action string) error
	// Signal sends sig to the task's main process: a container's first process, a
	// process task's own (the pid file's). A task that has ended is an error.
	Signal(ctx context.Context, id string, sig syscall.Signal) error
}
