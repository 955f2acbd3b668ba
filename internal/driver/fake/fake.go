// Package fake is an in-memory driver.Driver for tests and for simulating many nodes:
// tasks "run" until the test ends them (Exit, OOM) or the executor stops them. Everything
// is deterministic (PIDs count up from 1000, the clock is settable) and safe for concurrent
// use, so tests can assert on what the executor asked for: the tasks it started and in
// which order, the grace of every Stop, the commands of every Exec.
package fake

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/driver"
)

// ExecFunc answers an Exec of cmd on a task.
type ExecFunc func(ctx context.Context, cmd string) (driver.ExecResult, error)

// StartHook runs at the beginning of every Start (before the task exists); a non-nil
// error fails that Start. Tests use it to block a start until they release it.
type StartHook func(ctx context.Context, t *driver.Task) error

// Driver is the fake driver. The zero value is not usable; call New.
type Driver struct {
	name string

	mu        sync.Mutex
	tasks     map[string]*task
	started   []string
	stops     []string // the IDs of the first Stop of each task, in order
	failNext  map[string]error
	execs     map[string]ExecFunc
	logs      map[string]string
	actions   map[string][]string
	usage     map[string]driver.Usage
	startHook StartHook
	// check, when set (Docker), refuses a Start after the hook ran.
	check   func(t *driver.Task) error
	down    error // SetDown: every Start and List fails with it
	nextPid int
	now     func() time.Time
	waiters driver.Waiters
}

type task struct {
	spec    driver.Task
	state   driver.State
	grace   time.Duration
	stopped bool
}

// New returns an empty fake driver whose Name is name ("process" or "docker").
func New(name string) *Driver {
	return &Driver{
		name:     name,
		tasks:    map[string]*task{},
		failNext: map[string]error{},
		execs:    map[string]ExecFunc{},
		logs:     map[string]string{},
		actions:  map[string][]string{},
		usage:    map[string]driver.Usage{},
		nextPid:  1000,
		now:      time.Now,
	}
}

var _ driver.Driver = (*Driver)(nil)

// locked runs set under d's lock (the setters below).
func (d *Driver) locked(set func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	set()
}

// Name returns the kind given to New.
func (d *Driver) Name() string { return d.name }

// SetClock replaces time.Now for StartAt and FinishAt.
func (d *Driver) SetClock(now func() time.Time) { d.locked(func() { d.now = now }) }

// FailNextStart makes the next Start of a task whose name or ID is name fail with err.
func (d *Driver) FailNextStart(name string, err error) { d.locked(func() { d.failNext[name] = err }) }

// SetDown makes every Start and List fail with err, like a daemon that does not answer
// (nil brings it back).
func (d *Driver) SetDown(err error) { d.locked(func() { d.down = err }) }

// SetStartHook installs a hook run at the start of every Start (nil removes it).
func (d *Driver) SetStartHook(h StartHook) { d.locked(func() { d.startHook = h }) }

// SetExec makes Exec on the task id call fn (COMMAND health checks).
func (d *Driver) SetExec(id string, fn ExecFunc) { d.locked(func() { d.execs[id] = fn }) }

// SetLogs sets the text Logs returns for the task id.
func (d *Driver) SetLogs(id, text string) { d.locked(func() { d.logs[id] = text }) }

// Start records the task and makes it run, unless FailNextStart or the hook says otherwise.
func (d *Driver) Start(ctx context.Context, t *driver.Task) (driver.State, error) {
	d.mu.Lock()
	hook, down := d.startHook, d.down
	d.mu.Unlock()
	if down != nil {
		return driver.State{}, down
	}
	if hook != nil {
		if err := hook(ctx, t); err != nil {
			return driver.State{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return driver.State{}, fmt.Errorf("start %s: %w", t.ID, err)
	}
	if d.check != nil {
		if err := d.check(t); err != nil {
			return driver.State{}, err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, key := range []string{t.ID, t.Name} {
		if err, ok := d.failNext[key]; ok {
			delete(d.failNext, key)
			return driver.State{}, err
		}
	}
	if _, ok := d.tasks[t.ID]; ok {
		return driver.State{}, fmt.Errorf("start %s: task exists", t.ID)
	}
	spec := *t
	spec.Labels = maps.Clone(t.Labels)
	spec.Env = slices.Clone(t.Env)
	spec.Files = slices.Clone(t.Files)
	tk := d.addRunning(spec)
	d.started = append(d.started, t.ID)
	return copyState(tk.state), nil
}

// Add registers a running task as if a previous agent had started it (adoption tests)
// and returns its state. It does not count as Started.
func (d *Driver) Add(t driver.Task) driver.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return copyState(d.addRunning(t).state)
}

// addRunning adds spec as a task running since now, with the next pid (d.mu is held).
func (d *Driver) addRunning(spec driver.Task) *task {
	d.nextPid++
	tk := &task{spec: spec, state: driver.State{ID: spec.ID, Labels: maps.Clone(spec.Labels), Running: true}}
	tk.state.Info.ID = spec.ID
	tk.state.Info.Name = spec.Name
	tk.state.Info.Pid = d.nextPid
	tk.state.Info.StartAt = d.now()
	tk.state.Info.Status = "running"
	d.tasks[spec.ID] = tk
	return tk
}

// Exit ends a running task with the exit code.
func (d *Driver) Exit(id string, code int) {
	d.end(id, func(s *driver.State) {
		s.Info.ExitCode = code
		s.Info.Message = fmt.Sprintf("exited with code %d", code)
	})
}

// OOM ends a running task as killed by the kernel for running out of memory.
func (d *Driver) OOM(id string) {
	d.end(id, func(s *driver.State) {
		s.Info.ExitCode = 137
		s.Info.OOMKilled = true
		s.Info.Message = "killed: out of memory"
	})
}

func (d *Driver) end(id string, set func(*driver.State)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	if !ok || !tk.state.Running {
		return
	}
	tk.state.Running = false
	tk.state.Info.Status = "exited"
	tk.state.Info.FinishAt = d.now()
	set(&tk.state)
	d.waiters.Notify(id, copyState(tk.state))
}

// Wait delivers the task's state when it ends (Exit, OOM, Stop or Remove).
func (d *Driver) Wait(ctx context.Context, id string) (<-chan driver.State, error) {
	ch, cancel := d.waiters.Add(ctx, id)
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	if !ok {
		cancel()
		return nil, fmt.Errorf("wait %s: %w", id, driver.ErrNotFound)
	}
	if !tk.state.Running {
		d.waiters.Notify(id, copyState(tk.state))
	}
	return ch, nil
}

// Inspect returns the task's state.
func (d *Driver) Inspect(ctx context.Context, id string) (driver.State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	if !ok {
		return driver.State{}, fmt.Errorf("inspect %s: %w", id, driver.ErrNotFound)
	}
	return copyState(tk.state), nil
}

// Stop records the grace and ends the task (exit code 0 when it still ran).
func (d *Driver) Stop(ctx context.Context, id string, grace time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	if !ok {
		return fmt.Errorf("stop %s: %w", id, driver.ErrNotFound)
	}
	if !tk.stopped {
		tk.stopped, tk.grace = true, grace
		d.stops = append(d.stops, id)
	}
	if tk.state.Running {
		tk.state.Running = false
		tk.state.Info.Status = "exited"
		tk.state.Info.FinishAt = d.now()
		tk.state.Info.Message = "stopped"
		d.waiters.Notify(id, copyState(tk.state))
	}
	return nil
}

// Remove forgets the task.
func (d *Driver) Remove(ctx context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; !ok {
		return fmt.Errorf("remove %s: %w", id, driver.ErrNotFound)
	}
	delete(d.tasks, id)
	d.waiters.Notify(id, driver.Gone())
	return nil
}

// List returns every task, ordered by ID.
func (d *Driver) List(ctx context.Context) ([]driver.State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down != nil {
		return nil, d.down
	}
	out := make([]driver.State, 0, len(d.tasks))
	for _, tk := range d.tasks {
		out = append(out, copyState(tk.state))
	}
	slices.SortFunc(out, func(a, b driver.State) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Exec calls the function set with SetExec; without one it succeeds with no output.
func (d *Driver) Exec(ctx context.Context, id string, cmd string) (driver.ExecResult, error) {
	d.mu.Lock()
	_, ok := d.tasks[id]
	fn := d.execs[id]
	d.mu.Unlock()
	if !ok {
		return driver.ExecResult{}, fmt.Errorf("exec %s: %w", id, driver.ErrNotFound)
	}
	if fn == nil {
		return driver.ExecResult{}, nil
	}
	return fn(ctx, cmd)
}

// Logs returns the text set with SetLogs, read as the process driver reads a log: its
// CRI records (package crilog) by stream, with their times; plain lines as stdout.
func (d *Driver) Logs(ctx context.Context, id string, opts driver.LogOptions) (io.ReadCloser, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; !ok {
		return nil, fmt.Errorf("logs %s: %w", id, driver.ErrNotFound)
	}
	text := d.logs[id]
	ropts := crilog.Options{Stream: opts.Stream, Timestamps: opts.Timestamps}
	off, err := crilog.TailOffset(strings.NewReader(text), int64(len(text)), opts.Tail, ropts)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(crilog.NewReader(strings.NewReader(text[off:]), ropts)), nil
}

// Signal records "signal N" for Actions.
func (d *Driver) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	return d.Action(ctx, id, fmt.Sprintf("signal %d", int(sig)))
}

// Action records the action for Actions.
func (d *Driver) Action(ctx context.Context, id string, action string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; !ok {
		return fmt.Errorf("%s %s: %w", action, id, driver.ErrNotFound)
	}
	d.actions[id] = append(d.actions[id], action)
	return nil
}

// Started returns the IDs of every successful Start, in order.
func (d *Driver) Started() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.started)
}

// Stops returns the IDs of the tasks stopped, in the order of their first Stop.
func (d *Driver) Stops() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.stops)
}

// Stopped returns the grace of the first Stop of the task, and whether it was stopped.
func (d *Driver) Stopped(id string) (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	if !ok || !tk.stopped {
		return 0, false
	}
	return tk.grace, true
}

// Task returns the task as the executor gave it to Start (or Add).
func (d *Driver) Task(id string) (driver.Task, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	if !ok {
		return driver.Task{}, false
	}
	return tk.spec, true
}

// Running reports whether the task exists and runs.
func (d *Driver) Running(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	tk, ok := d.tasks[id]
	return ok && tk.state.Running
}

// Actions returns the actions run on the task, in order.
func (d *Driver) Actions(id string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.actions[id])
}

func copyState(s driver.State) driver.State {
	s.Labels = maps.Clone(s.Labels)
	return s
}
