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
	s := shim.Spec{
		Args: []string{"/bin/sh", "-c", holdScript, "sh", spec.Cmd}, Dir: spec.Dir, Env: spec.Env,
		PidFile: st.PidFile, ExitFile: d.exitPath(st.ID),
	}
	if c := spec.Cred; c != nil {
		s.Cred = &shim.Cred{UID: c.UID, GID: c.GID, Groups: c.Groups}
	}
	specJSON, err := json.Marshal(s)
	if err != nil {
		return fail(err)
	}
	// A record left by an earlier run of this task ID would name its pids.
	if err := os.Remove(s.ExitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	var pipes [3][2]*os.File // spec, hold, status: read and write ends
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		defer r.Close()
		defer w.Close()
		pipes[i] = [2]*os.File{r, w}
	}
	specR, specW := pipes[0][0], pipes[0][1]
	holdR, holdW := pipes[1][0], pipes[1][1]
	statusR, statusW := pipes[2][0], pipes[2][1]
	p, err := os.StartProcess(d.shimCmd[0], append(append([]string(nil), d.shimCmd...), st.ID), &os.ProcAttr{
		Dir: "/", Env: shimEnv,
		Files: []*os.File{specR, logf, logf, holdR, statusW},
		// Its own session: a signal to the agent's group does not reach it.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return fail(fmt.Errorf("start shim %s: %w", d.shimCmd[0], err))
	}
	procs := shimProcs{shim: p.Pid}
	p.Release() // the reaper waits for it
	d.reaper.watch(st.ID, procs.shim)
	specR.Close()
	holdR.Close()
	statusW.Close()
	kill := func() {
		syscall.Kill(procs.shim, syscall.SIGKILL)
		if procs.child > 0 {
			killGroup(procs.child, syscall.SIGKILL)
		}
	}
	written := make(chan error, 1)
	go func() {
		_, err := specW.Write(specJSON)
		specW.Close()
		written <- err
	}()
	statusR.SetReadDeadline(time.Now().Add(shimStartTimeout))
	line, err := bufio.NewReader(statusR).ReadString('\n')
	if werr := <-written; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		kill()
		return fail(fmt.Errorf("shim: %w", err))
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		kill()
		return fail(errors.New(msg))
	}
	pidText, ok := strings.CutPrefix(line, "ok ")
	if procs.child, err = strconv.Atoi(pidText); !ok || err != nil || procs.child <= 0 {
		kill()
		return fail(fmt.Errorf("shim said %q", line))
	}
	if spec.Cgroup != nil {
		if err := spec.Cgroup.AddProc(procs.child); err != nil {
			kill()
			return fail(fmt.Errorf("move into cgroup: %w", err))
		}
	}
	if _, err := holdW.Write([]byte("go\n")); err != nil {
		kill()
		return fail(fmt.Errorf("release: %w", err))
	}
	return procs, nil
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
