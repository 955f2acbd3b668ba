// Package executor runs task groups as pods on a node with BCS's executor semantics
// (docs/agent.md, Container pods): tasks start in order, any task that fails to start or exits fails the whole
// group and stops the others, a deliberate kill stops every task within the grace period
// and ends Finish; health checks (HTTP, TCP, COMMAND) run against the tasks; every change
// is reported at once. Drivers do the running; the agent decides what to run.
package executor

import (
	"context"
	"io"
	"log/slog"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/instvol"
	"github.com/berthhq/berth/internal/stepio"
)

// DataSource gives the configmaps and secrets a task group refers to (the agent fetches
// them from the server). Secret is asked on behalf of taskGroup, the task group being
// started, which the server checks is bound to the node and refers to the secret.
type DataSource interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v4.ConfigMap, error)
	Secret(ctx context.Context, namespace, name, taskGroup string) (*v4.Secret, error)
}

// InstanceVolumes creates the directory of one instance volume and returns its host path
// (instvol.Dirs.Mount); pod (ns/name) holds the instance until the agent releases it.
type InstanceVolumes interface {
	Mount(k instvol.Key, pod string, container int, mountPath string, owner instvol.Owner) (string, error)
}

// FlexVolumes mounts a pod's FlexVolume volumes through the drivers installed on the node
// (the agent's flexvolume plugins; docs/pods.md, "FlexVolume").
type FlexVolumes interface {
	// Mount mounts volume v of pod ("namespace/name") at dir, which it creates; secret is
	// the data of v's secretRef (nil without one). It is idempotent: a dir already
	// mounted for the pod is left as it is.
	Mount(ctx context.Context, pod, dir string, v *v4.FlexVolume, secret map[string][]byte) error
	// Unmount unmounts dir and forgets it; a dir that is not mounted is no error.
	Unmount(ctx context.Context, pod, dir string, v *v4.FlexVolume) error
}

// CSIVolumes publishes a pod's csi volumes (the agent's csivolume.Manager;
// docs/volumes.md, "On the node").
type CSIVolumes interface {
	// Publish claims volume v for task group taskGroup of namespace ns, the pod pod
	// ("namespace/name"), and publishes it at dir. It is idempotent: a dir already
	// published for the pod is left as it is.
	Publish(ctx context.Context, pod, dir, ns, taskGroup string, v *v4.CSIVolumeSource) error
	// Unpublish unpublishes dir and releases its claim; a dir never published is no
	// error.
	Unpublish(ctx context.Context, pod, dir string) error
}

// StepArtifacts are the server's artifact routes for workflow steps (docs/workflows.md,
// "Inputs and outputs"; *client.Client): the server takes the keys from the task
// group's spec.step, never from the agent. Get wraps fs.ErrNotExist for a missing one.
type StepArtifacts interface {
	AgentGetArtifact(ctx context.Context, ns, taskGroup, input string) (io.ReadCloser, error)
	AgentPutArtifact(ctx context.Context, ns, taskGroup, name string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error)
}

// DNS is the node's cluster DNS server: its address (host:port) and the cluster domain.
type DNS struct {
	Addr   string
	Domain string
}

// Config wires an executor.
type Config struct {
	NodeName string
	HostIP   string
	// DataDir holds the pods' directories: DataDir/pods/{namespace}.{name}/{work,run,logs}.
	DataDir string
	// Drivers by kind (driver.KindProcess runs process pods, driver.KindDocker container
	// pods; driver.KindOf decides).
	Drivers map[string]driver.Driver
	Data    DataSource
	Logger  *slog.Logger
	// Report receives every status change of a task group, at once and in order per
	// group, from the executor's goroutines (never from Run or Adopt). It must not block
	// for long, and must not call Kill or Remove (which wait for the pod's goroutine);
	// Status and List are fine.
	Report func(namespace, name string, status v4.TaskGroupStatus)
	// Admit, when set, is the node's own policy: a task group it refuses fails at start
	// with its error, and running tasks of one are not adopted.
	Admit func(*v4.TaskGroup) error

	// GPUs, when set, are the node's cards (the agent's devices/gpu.Manager): a task's
	// cards are looked up in it, on a node with cards every task's env says which it may
	// use, and a task's share of a card is enforced in the node's sharing mode before the
	// task starts (docs/gpus.md, "Enforcing shares").
	GPUs GPUs
	// Devices, when set, gives a task the devices of the device-plugin resources it asks
	// for (extended resources other than GPUs) before it starts: the agent's
	// devices/plugin.Manager.
	Devices Devices

	// Ports, when set, checks a task group's host ports before its tasks start, and
	// names the ports of a driver's "port in use" (hostports.Checker on a node): a port
	// another program holds fails the pod at once with ReasonPortConflict, so that the
	// controllers place it again on other ports instead of restarting it on the same.
	Ports PortChecker

	// Event, when set, records an event of a task group for its owner to see (a hook
	// that failed): typ is v4.EventNormal or v4.EventWarning, reason a word in
	// CamelCase. It is called from the pod's goroutines and must not block.
	Event func(namespace, name, typ, reason, message string)

	// Observer, when set, is told of task starts and health check results (metrics).
	Observer Observer

	// InstanceVolumes, when set, keeps the directories of the containers' instance
	// volumes (the agent's instvol.Dirs); without it a pod with one fails at start.
	InstanceVolumes InstanceVolumes

	// FlexVolumes, when set, mounts the pods' FlexVolume volumes; without it a pod with
	// one fails at start.
	FlexVolumes FlexVolumes
	// CSIPluginDir is where the node's CSI plugins listen (<dir>/<name>/csi.sock): a
	// csiPlugin pod volume is <dir>/<name> (csiplugin_volume.go). Empty, a pod with one
	// fails at start.
	CSIPluginDir string

	// CSIVolumes, when set, publishes the pods' csi volumes; without it a pod with one
	// fails at start.
	CSIVolumes CSIVolumes

	// DNS, when set, is the node's cluster DNS server, given to every task: processes
	// in BERTH_DNS and BCS_DNS, containers as their resolver.
	DNS *DNS

	// StepArtifacts, when set, stages and stores a workflow step's repository artifacts;
	// without it a step with one fails with a clear error. StepFetch is the policy of
	// its http and git inputs (nil: the default, which refuses loopback, link-local and
	// the node's addresses; docs/agent.md, -step-fetch-allow).
	StepArtifacts StepArtifacts
	StepFetch     *stepio.Policy

	// PollInterval is how often running tasks are inspected besides being waited for
	// (driver.Wait), a safety net for an end a driver missed (default 30 s; BCS polled
	// every second, which is what a pod gets while its driver cannot wait).
	PollInterval time.Duration
	// HealthTimeUnit is the length of one second of a health check's settings (interval,
	// timeout, grace): 1 s by default; tests scale it down.
	HealthTimeUnit time.Duration
	// ForceGrace is the grace of the forced stops that follow a failure (default 1 s).
	ForceGrace time.Duration
	// VolumeUsageInterval is how often the disk emptyDirs with a sizeLimit are measured
	// (default 10 s; docs/pods.md, "Volumes").
	VolumeUsageInterval time.Duration
}
