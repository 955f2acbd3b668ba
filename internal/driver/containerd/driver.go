// Package containerd is the driver that runs a container pod's tasks through containerd
// (docs/runtimes.md) with the pod semantics of the Docker driver (internal/driver/docker):
// BCS's command/args rules, env, files, volumes, resources and labels, Docker parameters
// (params.go), devices and cards (gpus.go), CPU binding (cpuset.go), a task joining the
// network of the pod's first container, its network holder, its CNI sandbox (pods.go:
// CNI and BRIDGE pods) or the host's, and CRI-format logs in the task's LogDir like the
// process driver's.
//
// Everything lives in one containerd namespace (DefaultNamespace): a container per task
// named like the Docker driver's (berth-<cluster tag>_<task id>) carrying berth's labels,
// its snapshot, and its task, run by a shim that outlives the agent. The driver keeps
// no state of its own about tasks, so an agent that restarts finds every task again
// through List. Only the task's files, resolver and hosts file live in
// DataDir/files/<id>, and what CNI DEL needs of a pod network in DataDir/pods/<pod id>.json.
package containerd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/gpus"
	"github.com/berthhq/berth/internal/logfile"
)

// Defaults of Config.
const (
	DefaultAddress     = "/run/containerd/containerd.sock"
	DefaultNamespace   = "berth"
	DefaultSnapshotter = "overlayfs"
	// RuntimeRunc is containerd's runc shim; its BinaryName option picks runc or crun.
	RuntimeRunc = "io.containerd.runc.v2"
)

// Labels the driver adds to its containers besides the driver.Label* ones.
const (
	// LabelID holds the task ID of a task container.
	LabelID = "berth.containerd.id"
	// LabelStopped marks a container Stop was asked to end: its SIGKILL is berth's, not
	// an OOM kill.
	LabelStopped = "berth.containerd.stopped"
	// LabelPod holds the pod ID of a pod's network sandbox container (pods.go).
	LabelPod = "berth.containerd.pod"
)

// Config configures a Driver.
type Config struct {
	// Address is containerd's socket; default DefaultAddress.
	Address string
	// Namespace is the containerd namespace of berth's containers; default DefaultNamespace.
	Namespace string
	// Snapshotter unpacks images and holds the containers' root file systems; default
	// DefaultSnapshotter.
	Snapshotter string
	// RuntimeBinary is the OCI runtime the runc shim runs for pods that name no runtime:
	// "runc" (default), "crun" or a path to either. It is the handler named after its
	// base name unless Runtimes has one of that name.
	RuntimeBinary string
	// Runtimes are the runtime handlers pods may name (spec.runtime), by name
	// (ParseHandlers, DefaultHandlers); the default one is added to them.
	Runtimes map[string]Handler
	// DefaultRuntime names the handler of pods that name none; default RuntimeBinary's
	// base name.
	DefaultRuntime string
	// RuntimeRoot is the OCI runtime's state directory (runc --root); default the shim's,
	// /run/containerd/runc (tests give one of their own).
	RuntimeRoot string
	// LoggerPath is the executable the shim starts to write a task's output to its log
	// (RunLogger); its base name must be LoggerName. Default: LoggerName beside the agent's
	// own executable, made as a link to it (EnsureLogger).
	LoggerPath string
	// Logger receives the driver's logs; nil discards them.
	Logger *slog.Logger
	// DataDir holds the files bind-mounted into containers (files/<task id>/...). Required.
	DataDir string
	// LogLimits bound each task's log (rotation by the logger); zero: not rotated.
	LogLimits logfile.Limits
	// Owner is the agent's cluster and node (driver.Owner): the driver names and labels
	// its containers after it and touches only the owner's.
	Owner driver.Owner
	// CNIBinDir holds the CNI plugins; default /usr/lib/cni. CNIConfDir holds the node's
	// CNI network (the first .conflist, .conf or .json in name order), which CNI and
	// BRIDGE pods get; default /etc/cni/net.d.
	CNIBinDir  string
	CNIConfDir string
	// NetworkImage is the image of pod sandboxes and network holders, which must be in
	// the namespace; default podsandbox.Image, built from the host's static busybox.
	NetworkImage string
	// GPURoot is where the NVIDIA driver's device nodes and files are looked for
	// (default "/"; tests give a tree of their own).
	GPURoot string
	// CertsDir is the hosts directory pulls read a registry's configuration from
	// (<dir>/<host:port>/ca.crt, client certificates, hosts.toml); default
	// DefaultCertsDir. A registry without one is trusted through the system's roots.
	CertsDir string
}

// Driver runs container tasks through containerd. It is safe for concurrent use.
type Driver struct {
	cli         *client.Client
	address     string
	ns          string
	snapshotter string
	// runtimes are the handlers by name; defaultRuntime is the one of pods naming none.
	runtimes       map[string]Handler
	defaultRuntime string
	runtimeRoot    string
	loggerPath     string
	log            *slog.Logger
	filesDir       string
	// fifoDir holds the FIFOs of Exec's processes (containerd's default is under /run).
	fifoDir   string
	logLimits logfile.Limits
	owner     driver.Owner
	prefix    string
	certsDir  string
	// pullEvery is how often a pull's progress is read (pullProgressEvery; tests less).
	pullEvery time.Duration

	// Pod networks (pods.go): the CNI plugins and config, libcni's cache, the pods'
	// states (DataDir/pods) and the sandbox image; podMu serialises setups and
	// teardowns, imageMu the build of the sandbox image.
	cniBinDir, cniConfDir, cniCacheDir string
	podsDir                            string
	networkImage                       string
	podMu                              sync.Mutex
	imageMu                            sync.Mutex

	// gpuFiles are the NVIDIA driver's files, found once (gpus.go).
	gpuFiles *gpus.Files
	// sysfs is where the NUMA topology is read (tests point it elsewhere); cpusetMu
	// serialises choosing CPUs and creating the container that records them
	// (labelCPUSet), so two Starts never pick the same free CPUs (cpuset.go).
	sysfs    string
	cpusetMu sync.Mutex

	// starting are the IDs whose Start runs (a second Start of one fails at once).
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
	_ driver.Driver         = (*Driver)(nil)
	_ driver.PodNetworks    = (*Driver)(nil)
	_ driver.NetworkHolders = (*Driver)(nil)
	_ driver.CNIBridge      = (*Driver)(nil)
	_ driver.Interactive    = (*Driver)(nil)
	_ driver.Processes      = (*Driver)(nil)
)

// New returns a driver talking to containerd at cfg.Address. It does not contact the
// daemon: a daemon that is down makes each call fail, and the driver works once it is
// back.
func New(cfg Config) (*Driver, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("containerd driver: DataDir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("containerd driver: data dir: %w", err)
	}
	ns := orDefault(cfg.Namespace, DefaultNamespace)
	if err := identifiers.Validate(ns); err != nil {
		return nil, fmt.Errorf("containerd driver: namespace: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	loggerPath := cfg.LoggerPath
	if loggerPath == "" {
		if loggerPath, err = EnsureLogger(filepath.Join(dataDir, "bin")); err != nil {
			return nil, fmt.Errorf("containerd driver: %w", err)
		}
	}
	if filepath.Base(loggerPath) != LoggerName || !filepath.IsAbs(loggerPath) {
		return nil, fmt.Errorf("containerd driver: logger %s: must be an absolute path named %s", loggerPath, LoggerName)
	}
	runtimes, defaultRuntime, err := handlers(cfg)
	if err != nil {
		return nil, fmt.Errorf("containerd driver: %w", err)
	}
	for _, w := range wrapHybridCrun(runtimes, filepath.Join(dataDir, "bin")) {
		log.Warn(w, "driver", "containerd")
	}
	address := orDefault(cfg.Address, DefaultAddress)
	cli, err := client.New(address, client.WithDefaultNamespace(ns), client.WithDefaultRuntime(RuntimeRunc),
		client.WithTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd driver: client for %s: %w", address, err)
	}
	d := &Driver{
		cli: cli, address: address, ns: ns,
		snapshotter:    orDefault(cfg.Snapshotter, DefaultSnapshotter),
		runtimes:       runtimes,
		defaultRuntime: defaultRuntime,
		runtimeRoot:    cfg.RuntimeRoot,
		loggerPath:     loggerPath,
		log:            log.With("driver", "containerd"),
		filesDir:       filepath.Join(dataDir, "files"),
		fifoDir:        filepath.Join(dataDir, "fifo"),
		logLimits:      cfg.LogLimits,
		owner:          cfg.Owner,
		prefix:         "berth-",
		cniBinDir:      orDefault(cfg.CNIBinDir, "/usr/lib/cni"),
		cniConfDir:     orDefault(cfg.CNIConfDir, "/etc/cni/net.d"),
		cniCacheDir:    filepath.Join(dataDir, "cni-cache"),
		podsDir:        filepath.Join(dataDir, "pods"),
		networkImage:   cfg.NetworkImage,
		certsDir:       orDefault(cfg.CertsDir, DefaultCertsDir),
		pullEvery:      pullProgressEvery,
		gpuFiles:       gpus.NewFiles(cfg.GPURoot),
		sysfs:          "/sys",
	}
	if tag := cfg.Owner.Tag(); tag != "" {
		d.prefix = "berth-" + tag + driver.TagSeparator
	}
	d.eventsCtx, d.eventsCancel = context.WithCancel(context.Background())
	for _, dir := range []string{d.filesDir, d.fifoDir, d.podsDir, d.cniCacheDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			cli.Close()
			return nil, fmt.Errorf("containerd driver: %w", err)
		}
	}
	return d, nil
}

// Name returns driver.KindDocker: the driver fills the container slot, the kind container
// pods run under (driver.KindOf), in place of the Docker driver.
func (d *Driver) Name() string { return driver.KindDocker }

// Runtime is what the node reports as its container runtime ("containerd").
func (d *Driver) Runtime() string { return "containerd" }

// Close stops the event stream and releases the client's connection. Tasks keep running.
func (d *Driver) Close() error {
	d.eventsCancel()
	d.eventsWG.Wait()
	return d.cli.Close()
}

// ctx puts the driver's namespace on ctx (the client's default covers most calls, not
// all: the content and image helpers read it from the context).
func (d *Driver) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, d.ns)
}

// maxName is the longest containerd ID (identifiers.Validate); maxID the longest task or
// pod ID, one file name under files/ or pods/ with room for a suffix.
const (
	maxName = 76
	maxID   = 200
)

// idPattern is a containerd identifier without its length limit: letters and digits,
// single '.', '_' or '-' between them (so no '/', no "..").
var idPattern = regexp.MustCompile(`^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$`)

// name is the containerd ID of task id's container: the prefix and the ID, or, when that
// is longer than containerd allows (BCS's task group names are long, and the network
// holder's task name adds 13), the prefix, the ID's start and a hash of the whole ID:
// stable, so every call finds the container again, and unique (the ID itself is in
// LabelID).
func (d *Driver) name(id string) string {
	n := d.prefix + id
	if len(n) <= maxName {
		return n
	}
	sum := sha256.Sum256([]byte(id))
	h := hex.EncodeToString(sum[:8])
	head := id[:max(0, min(len(id), maxName-len(d.prefix)-1-len(h)))]
	head = strings.TrimRight(head, "._-") // a separator must sit between letters or digits
	if head == "" {
		return d.prefix + h
	}
	return d.prefix + head + "-" + h
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// validID refuses task IDs that would not make a containerd ID (letters and digits,
// single '.', '_' or '-' between them; a long one is shortened by name) or one directory
// under files/.
func (d *Driver) validID(id string) bool {
	return len(id) <= maxID && idPattern.MatchString(id) && identifiers.Validate(d.name(id)) == nil
}

// checkID refuses an invalid task ID as unknown.
func (d *Driver) checkID(id string) error {
	if !d.validID(id) {
		return fmt.Errorf("task %q: %w", id, driver.ErrNotFound)
	}
	return nil
}

// wrap gives a containerd error its context and turns an unknown object into
// driver.ErrNotFound.
func (d *Driver) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%s: %w (%v)", what, driver.ErrNotFound, err)
	}
	if cerrdefs.IsUnavailable(err) {
		return fmt.Errorf("%s: containerd unreachable at %s: %w", what, d.address, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// background is for cleanup that must happen even when the caller's ctx has ended.
func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cleanupTimeout)
}

// cleanupTimeout bounds the removals done after a failure.
const cleanupTimeout = 30 * time.Second
