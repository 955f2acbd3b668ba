package process

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/berthhq/berth/internal/shim"
)

// shimStartTimeout bounds how long a shim may take to start the task's process and say
// so (a loaded node starting a hundred tasks at once is slow, not broken).
const shimStartTimeout = 30 * time.Second

// shimEnv is the shim's own environment: it needs none of the agent's, and one
// scheduler thread and a tight heap keep each shim at a few MB.
var shimEnv = []string{"GOMAXPROCS=1", "GOGC=20"}

// shimProcs are the processes a task was started with.
type shimProcs struct {
	shim, child int
}

// exitPath is where a task's shim records how its processes ended.
func (d *Driver) exitPath(id string) string { return filepath.Join(d.taskDir(id), "exit.json") }

// startShim starts the task's startCmd under a shim (package shim): the shim starts the
// shell, which waits on its descriptor 3 until the driver has moved it into the task's
// cgroup, then runs the command. The shim is a child of the agent only until the agent
// exits; the task's process is the shim's child.
func (d *Driver) startShim(st *taskState, spec shellSpec, logf *os.File) (shimProcs, error) {
	fail := func(err error) (shimProcs, error) { return shimProcs{}, fmt.Errorf("start %q: %w", spec.Cmd, err) }
	specJSON, err := d.shimSpec(st, spec)
	if err != nil {
		return fail(err)
	}
	pipes, err := openShimPipes()
	if err != nil {
		return fail(err)
	}
	defer pipes.close()
	procs, err := d.spawnShim(st.ID, pipes, logf)
	if err != nil {
		return fail(err)
	}
	kill := func() {
		syscall.Kill(procs.shim, syscall.SIGKILL)
		if procs.child > 0 {
			killGroup(procs.child, syscall.SIGKILL)
		}
	}
	if procs.child, err = pipes.exchange(specJSON); err != nil {
		kill()
		return fail(err)
	}
	if spec.Cgroup != nil {
		if err := spec.Cgroup.AddProc(procs.child); err != nil {
			kill()
			return fail(fmt.Errorf("move into cgroup: %w", err))
		}
	}
	if _, err := pipes.holdW.Write([]byte("go\n")); err != nil {
		kill()
		return fail(fmt.Errorf("release: %w", err))
	}
	return procs, nil
}

// shimSpec is the shim's spec of the task's shell, encoded; the exit record left by an
// earlier run of the task ID, which would name its pids, is removed, and the task's
// directory, where the shim records exits, is made: a start command that ends at once (a
// daemon's, which backgrounds its process) has its exit recorded before the driver saves
// the task's state, and a shim that cannot record it gives up on the task: its output
// pipes close with it, and the daemon dies of SIGPIPE on its first line of output.
func (d *Driver) shimSpec(st *taskState, spec shellSpec) ([]byte, error) {
	if err := os.MkdirAll(d.taskDir(st.ID), 0o700); err != nil {
		return nil, fmt.Errorf("make the state directory of task %q: %w", st.ID, err)
	}
	s := shim.Spec{
		Args: []string{"/bin/sh", "-c", holdScript, "sh", spec.Cmd}, Dir: spec.Dir, Env: spec.Env,
		PidFile: st.PidFile, ExitFile: d.exitPath(st.ID), LogFormat: st.LogFormat,
		LogPath: st.LogPath, LogMaxBytes: st.LogLimits.MaxBytes, LogMaxFiles: st.LogLimits.MaxFiles,
	}
	if c := spec.Cred; c != nil {
		s.Cred = &shim.Cred{UID: c.UID, GID: c.GID, Groups: c.Groups}
	}
	specJSON, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(s.ExitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return specJSON, nil
}

// shimPipes are the pipes to a shim: its spec (its stdin), the hold its shell waits on
// (descriptor 3) and its status line (descriptor 4).
type shimPipes struct {
	specR, specW     *os.File
	holdR, holdW     *os.File
	statusR, statusW *os.File
}

func openShimPipes() (*shimPipes, error) {
	p := &shimPipes{}
	for _, ends := range [][2]**os.File{{&p.specR, &p.specW}, {&p.holdR, &p.holdW}, {&p.statusR, &p.statusW}} {
		r, w, err := os.Pipe()
		if err != nil {
			p.close()
			return nil, err
		}
		*ends[0], *ends[1] = r, w
	}
	return p, nil
}

// close closes every end still open.
func (p *shimPipes) close() {
	for _, f := range []*os.File{p.specR, p.specW, p.holdR, p.holdW, p.statusR, p.statusW} {
		if f != nil {
			f.Close()
		}
	}
}

// spawnShim starts the shim of task id, in its own session, with the shim's ends of the
// pipes and logf for its output; the reaper waits for it.
func (d *Driver) spawnShim(id string, pipes *shimPipes, logf *os.File) (shimProcs, error) {
	p, err := os.StartProcess(d.shimCmd[0], append(append([]string(nil), d.shimCmd...), id), &os.ProcAttr{
		Dir: "/", Env: shimEnv,
		Files: []*os.File{pipes.specR, logf, logf, pipes.holdR, pipes.statusW},
		// Its own session: a signal to the agent's group does not reach it.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return shimProcs{}, fmt.Errorf("start shim %s: %w", d.shimCmd[0], err)
	}
	procs := shimProcs{shim: p.Pid}
	p.Release() // the reaper waits for it
	d.reaper.watch(id, procs.shim)
	pipes.specR.Close()
	pipes.holdR.Close()
	pipes.statusW.Close()
	return procs, nil
}

// exchange sends the shim its spec and reads its status line: the pid of the task's
// process it started, or why it could not.
func (p *shimPipes) exchange(specJSON []byte) (int, error) {
	written := make(chan error, 1)
	go func() {
		_, err := p.specW.Write(specJSON)
		p.specW.Close()
		written <- err
	}()
	p.statusR.SetReadDeadline(time.Now().Add(shimStartTimeout))
	line, err := bufio.NewReader(p.statusR).ReadString('\n')
	if werr := <-written; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return 0, fmt.Errorf("shim: %w", err)
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return 0, errors.New(msg)
	}
	pidText, ok := strings.CutPrefix(line, "ok ")
	child, err := strconv.Atoi(pidText)
	if !ok || err != nil || child <= 0 {
		return 0, fmt.Errorf("shim said %q", line)
	}
	return child, nil
}

// recordedExit returns how process pid of a shim-started task ended, as its shim
// recorded it.
func (d *Driver) recordedExit(st *taskState, pid int) (childExit, bool) {
	if st.ShimPid <= 0 || pid <= 0 {
		return childExit{}, false
	}
	rec, err := shim.ReadRecord(d.exitPath(st.ID))
	if err != nil {
		d.log.Warn("unreadable exit record", "task", st.ID, "err", err)
		return childExit{}, false
	}
	e, ok := rec.Find(pid)
	if !ok {
		return childExit{}, false
	}
	return childExit{ID: st.ID, Code: e.Code, SIGKILLed: e.Signal == int(syscall.SIGKILL), At: e.At}, true
}

// startExit returns how the process berth started (the start command) ended, once its
// shim has recorded it.
func (d *Driver) startExit(st *taskState) (childExit, bool) {
	return d.recordedExit(st, st.ChildPid)
}

// shimRecordWait bounds how long a task whose process is gone waits for its live shim
// to record the exit (the shim reaps it and writes the file within milliseconds).
const shimRecordWait = 2 * time.Second

// awaitRecordedExit waits, while the task's shim still runs, for it to record pid's exit.
func (d *Driver) awaitRecordedExit(st *taskState, pid int) (childExit, bool) {
	deadline := time.Now().Add(shimRecordWait)
	for {
		if e, ok := d.recordedExit(st, pid); ok {
			return e, true
		}
		if !alive(st.ShimPid, st.ShimStartTicks) || time.Now().After(deadline) {
			return d.recordedExit(st, pid) // it may have written just before exiting
		}
		time.Sleep(10 * time.Millisecond)
	}
}
