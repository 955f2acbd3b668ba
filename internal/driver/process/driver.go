// Package process is the driver that runs a process pod's tasks as plain host processes
// (docs/process.md): it fetches the packages listed in uris, writes configmap and secret files,
// runs startCmd with /bin/sh in workPath as the task's user inside the task's cgroups,
// follows the process through pidFile and procName, and stops it with stopCmd, SIGTERM
// and finally SIGKILL of everything left in its cgroup.
//
// Processes are started in their own session with their output appended to a log file, so
// they outlive the agent. What the driver knows of a task is kept in
// DataDir/tasks/{id}/state.json, so a new Driver on the same DataDir (an agent that
// restarted) lists and adopts every task.
package process

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/logfile"
	"github.com/berthhq/berth/internal/shim"
)

// Config configures a Driver.
type Config struct {
	// DataDir holds the driver's state (tasks/{id}/state.json) and its package cache
	// (cache/). Required.
	DataDir string
	// Logger receives the driver's logs; nil discards them.
	Logger *slog.Logger
	// CgroupParent is the cgroup under which every task gets /{CgroupParent}/{task id};
	// default "berth".
	CgroupParent string
	// RootCAs are trusted for package downloads over HTTPS besides the system's roots: the
	// agent passes the cluster CA, so packages served by berth's own servers download.
	RootCAs []*x509.Certificate
	// DefaultUser runs the tasks whose spec names no user ("" for the driver's own user).
	// The agent gives its --default-user, an unprivileged one: a spec without a user must
	// not run as root.
	DefaultUser string
	// DynamicUIDs, when set, runs the tasks whose spec names no user under a uid of their
	// own task group's from this range (identity.go) instead of DefaultUser: the agent
	// running as root sets it.
	DynamicUIDs *UIDRange
	// HostVolumes are the host directories (besides the pod's own) where a task's paths
	// (workPath, pidFile, outputDir, files, file:// packages) may be: the node's
	// --host-volumes, which its guard already checked the spec against. Paths elsewhere
	// are refused (sandbox.go).
	HostVolumes []string
	// Protected are directories no task path may reach, even below a host volume: the
	// agent's data dir (its keys and checkpoint), a server's data dir on the same node.
	Protected []string
	// Shim is the command that runs a task's shim (package shim); the task ID is added
	// to it. Default: this very executable with the argument "shim" (the berth binary;
	// a test binary calls shim.RunIfCalled in its TestMain).
	Shim []string
	// LogLimits bound each task's log (package logfile): its shim rotates it past
	// MaxBytes and keeps MaxFiles files in all. Zero: logfile.DefaultMaxBytes and
	// logfile.DefaultMaxFiles.
	LogLimits logfile.Limits
	// Owner is the agent's cluster and node: tasks are labelled with the cluster, their
	// cgroups named after it, and only the owner's tasks are listed, inspected, stopped
	// or removed (owner.go). The zero Owner keeps berth's older cgroup names.
	Owner driver.Owner
}

// Driver runs process tasks. It is safe for concurrent use. Close stops its reaper.
type Driver struct {
	dataDir      string
	cacheDir     string
	tasksDir     string
	log          *slog.Logger
	cgroupParent string
	cgroups      cgroupSystem
	defaultUser  string
	ids          *identities // nil: no dynamic uids
	hostVolumes  []string
	protected    []string
	owner        driver.Owner

	locks keyedMutex // per task ID: serialises state.json read-modify-write

	http       *http.Client // package downloads (fetch.go)
	fetchLocks keyedMutex   // per cache key: one download of a URL at a time

	reaper    *reaper
	shimCmd   []string
	logLimits logfile.Limits
}

var _ driver.Driver = (*Driver)(nil)

// pollInterval is how often Start, Stop and followed logs look at a process or a file.
const pollInterval = 50 * time.Millisecond

// New returns a driver keeping its state under cfg.DataDir. Tasks recorded there by an
// earlier Driver (before an agent restart) are listed and inspected like any other.
func New(cfg Config) (*Driver, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("process driver: DataDir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("process driver: data dir: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	parent := cfg.CgroupParent
	if parent == "" {
		parent = "berth"
	}
	lim := cfg.LogLimits
	if lim == (logfile.Limits{}) {
		lim = logfile.Limits{MaxBytes: logfile.DefaultMaxBytes, MaxFiles: logfile.DefaultMaxFiles}
	}
	if err := lim.Check(); err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	if !validCgroupParent(parent) {
		return nil, fmt.Errorf("process driver: invalid cgroup parent %q", cfg.CgroupParent)
	}
	d := &Driver{
		dataDir:      dataDir,
		cacheDir:     filepath.Join(dataDir, "cache"),
		tasksDir:     filepath.Join(dataDir, "tasks"),
		log:          log.With("driver", "process"),
		cgroupParent: parent,
		cgroups:      detectCgroups(),
		defaultUser:  cfg.DefaultUser,
		http:         newHTTPClient(cfg.RootCAs),
		shimCmd:      cfg.Shim,
		protected:    append(cleanDirs(cfg.Protected), dataDir, "/proc", "/sys"),
		hostVolumes:  cleanDirs(cfg.HostVolumes),
		owner:        cfg.Owner,
		logLimits:    lim,
	}
	if cfg.DynamicUIDs != nil {
		d.ids = newIdentities(*cfg.DynamicUIDs)
	}
	if len(d.shimCmd) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("process driver: the shim is this executable: %w", err)
		}
		d.shimCmd = []string{exe, shim.Arg}
	}
	for _, dir := range []string{d.cacheDir, d.tasksDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("process driver: %w", err)
		}
	}
	d.reaper = newReaper(d)
	// Children of this very process recorded by an earlier Driver (tests, or an agent
	// that recreates its driver) are still ours to reap.
	states, err := d.loadAll()
	if err != nil {
		d.reaper.close()
		return nil, err
	}
	for _, st := range states {
		if st.UID != 0 && d.ids != nil {
			d.ids.hold(st.Group, st.UID)
		}
		if !st.Exited && st.ChildPid > 0 && isOwnChild(st.ChildPid, st.ChildStartTicks) {
			d.reaper.watch(st.ID, st.ChildPid)
		}
		if st.ShimPid > 0 && isOwnChild(st.ShimPid, st.ShimStartTicks) {
			d.reaper.watch(st.ID, st.ShimPid)
		}
	}
	return d, nil
}

// Name returns "process".
func (d *Driver) Name() string { return driver.KindProcess }

// Close stops the driver's reaper goroutine. The tasks keep running; a later New on the
// same DataDir adopts them.
func (d *Driver) Close() error {
	d.reaper.close()
	return nil
}
