// Package docker is the driver that runs a container pod's tasks as Docker containers
// with the semantics of BCS's container executor (docs/docker.md): it pulls the image per
// imagePullPolicy, applies BCS's command/entrypoint rules, resources, docker parameters
// and the cpuset/NUMA rules, joins a task to the pod's first container or CNI sandbox,
// and reports BCS's container info from docker inspect.
//
// The driver keeps no state of its own about tasks: everything it needs is in Docker
// (container name berth-<cluster tag>_<task id>, berth labels: owner.go), so an agent or
// a dockerd that restarts finds every task again through List. Only what CNI DEL needs
// (the network config, the sandbox's ID, the pod's IP) is kept in DataDir/pods/<id>.json,
// because Docker knows nothing of CNI.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/gpus"
	"github.com/berthhq/berth/internal/logfile"
)

// Labels the driver adds to its containers besides the driver.Label* ones the executor
// gives. They are how List, the cpuset allocator and TeardownPod find containers again.
const (
	// LabelID holds the task ID of a task container.
	LabelID = "berth.docker.id"
	// LabelCPUSet holds the CPUs a task container is bound to (cpuset-cpus), so the
	// allocator knows which CPUs are taken without any state of its own.
	LabelCPUSet = "berth.docker.cpuset"
	// LabelPod holds the pod ID of a CNI sandbox container.
	LabelPod = "berth.docker.pod"
)

// Config configures a Driver.
type Config struct {
	// Host is the Docker daemon's address; default DOCKER_HOST, else the local socket.
	Host string
	// Logger receives the driver's logs; nil discards them.
	Logger *slog.Logger
	// DataDir holds the files bind-mounted into containers (files/<task id>/...), the
	// CNI pods' state (pods/<id>.json) and the CNI cache. Required.
	DataDir string
	// CNIBinDir holds the CNI plugins; default /usr/lib/cni.
	CNIBinDir string
	// CNIConfDir holds the CNI network config (the first .conflist, .conf or .json in
	// name order); default /etc/cni/net.d.
	CNIConfDir string
	// NetworkImage is the image of CNI sandbox containers; default DefaultNetworkImage,
	// built by the driver from the host's static busybox when missing.
	NetworkImage string
	// GPURoot is where the NVIDIA driver's device nodes and files are looked for
	// (default "/"; tests give a tree of their own, and then never use the toolkit).
	GPURoot string
	// SeccompProfiles are the node's seccomp profiles (Docker's JSON) by name: a
	// container's `security-opt seccomp=NAME` runs with that profile (seccomp.go).
	SeccompProfiles map[string]string
	// LogLimits bound the log of a container whose spec sets no log options, when the
	// daemon's default log driver rotates (logopts.go); zero: not bounded by berth.
	LogLimits logfile.Limits
	// Owner is the agent's cluster and node: the driver labels and names its containers
	// and sandboxes after the cluster, and lists, stops and removes only the owner's
	// (owner.go). The zero Owner keeps berth's older names and labels.
	Owner driver.Owner
}

// Driver runs container tasks through the Docker API. It is safe for concurrent use.
type Driver struct {
	cli *client.Client
	// transport is the client's (legacymac.go), whose idle connections Close releases.
	transport *http.Transport
	host      string
	log       *slog.Logger
	dataDir   string
	filesDir  string

	// remap is whether the daemon remaps user namespaces (fileowner.go), once known.
	remapMu    sync.Mutex
	remap      bool
	remapKnown bool
	podsDir    string

	cniBinDir, cniConfDir, cniCacheDir string
	networkImage                       string
	seccompProfiles                    map[string]string
	// logLimits bound containers' logs; logDriver is the daemon's default log driver,
	// once known (logopts.go), under logDriverMu.
	logLimits   logfile.Limits
	logDriverMu sync.Mutex
	logDriver   *string
	// owner is whose containers the driver touches; prefix begins their names
	// ("berth-<cluster tag>_", or "berth-" without a cluster).
	owner  driver.Owner
	prefix string
	// sysfs is where the NUMA topology is read (tests point it elsewhere).
	sysfs string
	// cpusetLabel is the label that records a container's bound CPUs: LabelCPUSet. A
	// test sharing its Docker daemon with other tests gives it a name of its own, so
	// the CPUs their containers bind do not count against it.
	cpusetLabel string

	// stopped holds the tasks Stop was asked to end (until Remove): their SIGKILL is
	// berth's, not an OOM kill Inspect should wait to hear about.
	stopped sync.Map
	// gpuFiles are the NVIDIA driver's files (under Config.GPURoot); toolkit is whether
	// its container toolkit is installed, once known (gpus.go), under gpuMu.
	gpuFiles *gpus.Files
	gpuMu    sync.Mutex
	toolkit  *bool
	// cpusetMu serialises choosing CPUs and creating the container that binds them, so
	// two Starts never pick the same free CPUs.
	cpusetMu sync.Mutex
	// podMu serialises SetupPod and TeardownPod (few and slow; no need for finer locks).
	podMu sync.Mutex
	// imageMu serialises building the default network image.
	imageMu sync.Mutex

	// starting are the IDs whose Start runs, so a second Start of the same ID fails at
	// once instead of rewriting the first one's files.
	starting driver.Starting

	// waiters are the Wait calls; one event stream (wait.go), started by the first Wait
	// and stopped by Close, serves them all.
	waiters      driver.Waiters
	eventsOnce   sync.Once
	eventsCtx    context.Context
	eventsCancel context.CancelFunc
	eventsWG     sync.WaitGroup
}

var (
	_ driver.Driver      = (*Driver)(nil)
	_ driver.PodNetworks = (*Driver)(nil)
	_ driver.Interactive = (*Driver)(nil)
)

// New returns a driver talking to cfg.Host. It does not contact the daemon: a daemon
// that is down makes each call fail with "docker daemon unreachable at ...", and the
// driver works once it is back.
func New(cfg Config) (*Driver, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("docker driver: DataDir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("docker driver: data dir: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	host := cfg.Host
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host == "" {
		host = client.DefaultDockerHost
	}
	cli, transport, err := newClient(host)
	if err != nil {
		return nil, fmt.Errorf("docker driver: client for %s: %w", host, err)
	}
	d := &Driver{
		cli:          cli,
		transport:    transport,
		host:         host,
		log:          log.With("driver", "docker"),
		dataDir:      dataDir,
		filesDir:     filepath.Join(dataDir, "files"),
		podsDir:      filepath.Join(dataDir, "pods"),
		cniBinDir:    orDefault(cfg.CNIBinDir, "/usr/lib/cni"),
		cniConfDir:   orDefault(cfg.CNIConfDir, "/etc/cni/net.d"),
		cniCacheDir:  filepath.Join(dataDir, "cni-cache"),
		networkImage: cfg.NetworkImage,
		sysfs:        "/sys",
		gpuFiles:     gpus.NewFiles(cfg.GPURoot),
		cpusetLabel:  LabelCPUSet,
		owner:        cfg.Owner,
		prefix:       containerName(""),
	}
	if tag := cfg.Owner.Tag(); tag != "" {
		d.prefix = containerName(tag + driver.TagSeparator)
	}
	d.seccompProfiles = cfg.SeccompProfiles
	d.logLimits = cfg.LogLimits
	d.eventsCtx, d.eventsCancel = context.WithCancel(context.Background())
	for _, dir := range []string{d.filesDir, d.podsDir, d.cniCacheDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			d.closeClient()
			return nil, fmt.Errorf("docker driver: %w", err)
		}
	}
	return d, nil
}

// Name returns "docker".
func (d *Driver) Name() string { return driver.KindDocker }

// Close stops the event stream and releases the client's connections. Containers keep
// running.
func (d *Driver) Close() error {
	d.eventsCancel()
	d.eventsWG.Wait()
	return d.closeClient()
}

// closeClient releases the client's connections.
func (d *Driver) closeClient() error {
	d.transport.CloseIdleConnections()
	return d.cli.Close()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// containerName is the Docker name of a task's container without a cluster tag: every
// container's before containers carried their cluster (a driver without an owner's
// cluster still names them so). Driver.name is the name a driver gives.
func containerName(id string) string { return "berth-" + id }

// validID refuses IDs that would not make a Docker container name ([a-zA-Z0-9][a-zA-Z0-9_.-]*)
// or one directory under files/ and pods/.
func validID(id string) bool {
	if id == "" || id == "." || id == ".." {
		return false
	}
	for i, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			i > 0 && (r == '_' || r == '.' || r == '-')
		if !ok {
			return false
		}
	}
	return true
}

// wrap gives a daemon error its context, and turns the two errors callers act on into
// recognisable ones: the daemon being unreachable and an unknown object.
func (d *Driver) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	switch {
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%s: docker daemon unreachable at %s: %w", what, d.host, err)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w (%v)", what, driver.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// checkID refuses an invalid task ID as unknown.
func checkID(id string) error {
	if !validID(id) {
		return fmt.Errorf("task %q: %w", id, driver.ErrNotFound)
	}
	return nil
}

// background is for cleanup that must happen even when the caller's ctx has ended.
func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cleanupTimeout)
}
