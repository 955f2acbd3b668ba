package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/logfile"
)

// taskState is what the driver records of one task in DataDir/tasks/{id}/state.json. It
// holds everything Stop, Exec, Action and Inspect need, so an agent that restarted can
// run them on a task it did not start.
type taskState struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`

	// Pid is the task's process: the pidFile's pid, or the process berth started.
	// PidStartTicks is its start time from /proc/<pid>/stat (field 22), to tell it from
	// a later process that reuses the pid.
	Pid           int       `json:"pid"`
	PidStartTicks uint64    `json:"pidStartTicks"`
	StartAt       time.Time `json:"startAt"`
	// ChildPid is the process berth started (the shell running startCmd, or the program
	// it became through exec): the shim's child.
	ChildPid        int    `json:"childPid"`
	ChildStartTicks uint64 `json:"childStartTicks"`
	// ShimPid is the task's shim (package shim), which records how ChildPid and the pid
	// file's process end in exit.json. Zero for a task an older agent started without
	// one: its ChildPid is then the agent's own child, reaped by the driver.
	ShimPid        int    `json:"shimPid,omitempty"`
	ShimStartTicks uint64 `json:"shimStartTicks,omitempty"`

	StartCmd string `json:"startCmd"`
	ProcName string `json:"procName,omitempty"`
	PidFile  string `json:"pidFile,omitempty"`
	User     string `json:"user,omitempty"`
	// UID is the task group's dynamic uid when the spec names no user (identity.go);
	// Group names the task group that holds it.
	UID     uint32 `json:"uid,omitempty"`
	Group   string `json:"group,omitempty"`
	WorkDir string `json:"workDir"`
	// PodDirs are the pod's work and run dirs, where the task's paths may lead besides
	// the node's host volumes (sandbox.go).
	PodDirs []string `json:"podDirs,omitempty"`
	LogPath string   `json:"logPath"`
	// LogFormat is "cri" (crilog.Format) for a log of records, stdout and stderr apart;
	// empty for a task an older agent started, whose log is raw text read as stdout.
	LogFormat string `json:"logFormat,omitempty"`
	// LogLimits are the limits the task's shim rotates its log by, as the driver that
	// started it was configured: an agent restarted with other limits reads the task's
	// rotated files by the limits its shim keeps. Zero: the log is one file, not rotated
	// (a task an older agent started).
	LogLimits  logfile.Limits `json:"logLimits,omitzero"`
	Env        []string       `json:"env,omitempty"`
	StopCmd    string         `json:"stopCmd,omitempty"`
	ReloadCmd  string         `json:"reloadCmd,omitempty"`
	RestartCmd string         `json:"restartCmd,omitempty"`
	StartGrace time.Duration  `json:"startGrace"`
	KillGrace  time.Duration  `json:"killGrace"`

	// Cgroup is the task's cgroup path (/{parent}/{id}) in CgroupMode ("v1" or "v2");
	// empty when the task runs without one.
	Cgroup     string `json:"cgroup,omitempty"`
	CgroupMode string `json:"cgroupMode,omitempty"`

	Exited    bool      `json:"exited"`
	FinishAt  time.Time `json:"finishAt,omitzero"`
	ExitCode  int       `json:"exitCode"`
	OOMKilled bool      `json:"oomKilled"`
	Message   string    `json:"message,omitempty"`
	// Stopping is set while (and after) Stop runs, so an exit is known as deliberate.
	Stopping bool `json:"stopping,omitempty"`
}

func (d *Driver) taskDir(id string) string   { return filepath.Join(d.tasksDir, id) }
func (d *Driver) statePath(id string) string { return filepath.Join(d.taskDir(id), "state.json") }

// validID refuses IDs that would not name one directory under tasks/ and one cgroup.
func validID(id string) bool {
	return id != "" && filepath.IsLocal(id) && !strings.ContainsAny(id, "/\\\x00") && id != "."
}

// loadCurrent is load with the state brought up to date (is the process still there?) and
// saved when that changed it. The caller holds the task's lock.
func (d *Driver) loadCurrent(id string) (*taskState, error) {
	st, err := d.load(id)
	if err != nil {
		return nil, err
	}
	if d.refresh(st) {
		if err := d.save(st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// read reads one task's state, whoever's it is (load is the owner's); driver.ErrNotFound
// when the driver has none.
func (d *Driver) read(id string) (*taskState, error) {
	if !validID(id) {
		return nil, fmt.Errorf("task %q: %w", id, driver.ErrNotFound)
	}
	b, err := os.ReadFile(d.statePath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("task %q: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read state of task %q: %w", id, err)
	}
	var st taskState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode state of task %q: %w", id, err)
	}
	return &st, nil
}

// save writes the state atomically (temp file, fsync, rename): a crash leaves the old or
// the new state, never half of one. The file is private: Env may hold secrets.
func (d *Driver) save(st *taskState) error {
	dir := d.taskDir(st.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save state of task %q: %w", st.ID, err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of task %q: %w", st.ID, err)
	}
	if err := atomicfile.Write(d.statePath(st.ID), b, 0o600); err != nil {
		return fmt.Errorf("save state of task %q: %w", st.ID, err)
	}
	return nil
}

// loadAll reads every recorded task, sorted by ID, also those of another owner (List
// leaves them out; their uids stay taken). Unreadable entries are logged and skipped so
// one bad file does not hide the other tasks.
func (d *Driver) loadAll() ([]*taskState, error) {
	entries, err := os.ReadDir(d.tasksDir)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	var out []*taskState
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		st, err := d.read(e.Name())
		if err != nil {
			if !errors.Is(err, driver.ErrNotFound) {
				d.log.Warn("skipping unreadable task state", "task", e.Name(), "err", err)
			}
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// markExited records how the task ended (once).
func (st *taskState) markExited(code int, msg string, at time.Time) {
	st.Exited = true
	st.ExitCode = code
	st.FinishAt = at
	if msg != "" {
		st.Message = msg
	}
}

// public turns the record into the driver's State.
func (st *taskState) public() driver.State {
	info := v4.ContainerInfo{
		ID:        st.ID,
		Name:      st.Name,
		Pid:       st.Pid,
		StartAt:   st.StartAt,
		Status:    "running",
		OOMKilled: st.OOMKilled,
		Message:   st.Message,
	}
	if st.Exited {
		info.Status = "exited"
		info.FinishAt = st.FinishAt
		info.ExitCode = st.ExitCode
	}
	labels := make(map[string]string, len(st.Labels))
	for k, v := range st.Labels {
		labels[k] = v
	}
	return driver.State{ID: st.ID, Labels: labels, Running: !st.Exited, Info: info}
}
