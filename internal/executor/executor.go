package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// ErrUnknownPod is returned for a task group the executor does not know.
var ErrUnknownPod = errors.New("task group not known to the executor")

// Executor runs the pods of one node. Every method is safe for concurrent use.
type Executor struct {
	cfg Config
	log *slog.Logger

	// ctx ends with Close; every pod goroutine derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	pods map[string]*pod // by namespace/name
}

// PodRef names a pod and its latest status.
type PodRef struct {
	Namespace string
	Name      string
	Status    v4.TaskGroupStatus
}

// New returns an executor; it runs nothing until Run or Adopt.
func New(cfg Config) *Executor {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 30 * time.Second
	}
	if cfg.HealthTimeUnit <= 0 {
		cfg.HealthTimeUnit = time.Second
	}
	if cfg.ForceGrace <= 0 {
		cfg.ForceGrace = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Executor{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, pods: map[string]*pod{}}
}

// TaskID is the driver.Task ID of a task: "{namespace}.{name}.{task}".
func TaskID(namespace, name, task string) string {
	return namespace + "." + name + "." + task
}

// PodDir is the directory of a pod's work, run and logs directories.
func PodDir(dataDir, namespace, name string) string {
	return filepath.Join(dataDir, "pods", namespace+"."+name)
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// Run starts the task group as a pod and monitors it, in goroutines the executor owns;
// it returns at once (every report comes from the pod's goroutine, Staging first). A pod it already knows (running or ended)
// is left alone: to run an ended one again, Remove it first. ctx bounds the start: when it
// ends before every task runs, the started tasks are stopped and the pod fails.
func (e *Executor) Run(ctx context.Context, tg *v4.TaskGroup) {
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	e.mu.Lock()
	if e.ctx.Err() != nil {
		e.mu.Unlock()
		e.log.Warn("executor closed: not running task group", "namespace", ns, "name", name)
		return
	}
	if _, ok := e.pods[podKey(ns, name)]; ok {
		e.mu.Unlock()
		return
	}
	p := e.newPod(tg)
	e.pods[podKey(ns, name)] = p
	e.wg.Add(1)
	e.mu.Unlock()

	go e.runPod(ctx, p, nil)
}

// runPod runs the pod's goroutine until the pod ends or the executor closes. startCtx
// bounds only the start: monitoring must not stop because a caller's context ended.
func (e *Executor) runPod(startCtx context.Context, p *pod, adopted []driver.State) {
	defer e.wg.Done()
	p.run(e.ctx, startCtx, adopted)
}

// Kill stops the pod deliberately: every task Killing, stopped with the task group's
// kill grace period, then Finish. It returns once the pod ended (or the executor closed);
// it is a no-op for an unknown or ended pod.
func (e *Executor) Kill(namespace, name string) {
	p := e.pod(namespace, name)
	if p == nil {
		return
	}
	p.requestKill()
	select {
	case <-p.done:
	case <-e.ctx.Done():
	}
}

// Remove forgets a pod: it is killed first if it still runs, then every task is removed
// from its driver and the pod's directory is deleted. An unknown pod only has its
// directory deleted. On a driver error the pod stays known, so Remove can be retried.
func (e *Executor) Remove(ctx context.Context, namespace, name string) error {
	p := e.pod(namespace, name)
	if p == nil {
		e.teardownUnknown(ctx, namespace, name)
		return removeDir(PodDir(e.cfg.DataDir, namespace, name))
	}
	e.Kill(namespace, name)
	if !p.ended() {
		// Closed while the pod runs: its tasks must keep running for the next agent.
		return fmt.Errorf("%s/%s: executor closed while the pod runs", namespace, name)
	}
	var errs []error
	if p.plan.net != nil && p.plan.net.cni {
		// Also when the sandbox is gone: CNI DEL releases the pod's IP all the same.
		p.mu.Lock()
		p.sandbox = true
		p.mu.Unlock()
		if err := p.teardownNetwork(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range p.plan.tasks {
		if t.drv == nil {
			continue
		}
		if err := t.drv.Remove(ctx, t.id); err != nil && !errors.Is(err, driver.ErrNotFound) {
			e.observer().DriverError(t.driverName(), "remove")
			errs = append(errs, fmt.Errorf("remove task %s: %w", t.id, err))
		}
	}
	if err := p.removeHolder(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := p.releaseVolumes(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := removeDir(p.plan.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	e.mu.Lock()
	if e.pods[podKey(namespace, name)] == p {
		delete(e.pods, podKey(namespace, name))
	}
	e.mu.Unlock()
	return nil
}

// teardownUnknown tears down the CNI network a pod the executor does not know may have
// left (deleted while the agent was away): its spec is gone, so every driver with pod
// networks is asked. It is best effort: a pod that never had a sandbox is not an error
// worth keeping the pod for.
func (e *Executor) teardownUnknown(ctx context.Context, namespace, name string) {
	for _, kind := range slices.Sorted(maps.Keys(e.cfg.Drivers)) {
		pn, ok := e.cfg.Drivers[kind].(driver.PodNetworks)
		if !ok {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, teardownTimeout)
		err := pn.TeardownPod(tctx, namespace+"."+name)
		cancel()
		if err != nil && !isGone(err) {
			e.log.Warn("pod network teardown of a removed pod", "namespace", namespace, "name", name, "driver", kind, "err", err)
		}
	}
}

// removeDir removes a pod's directory, after unmounting what is mounted in it (a
// Memory emptyDir's tmpfs, a FlexVolume, left by a crash or by a pod the agent no longer
// knows): the removal must never reach through a mount point.
func removeDir(dir string) error {
	if err := unmountBelow(dir); err != nil {
		return fmt.Errorf("remove pod directory: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pod directory: %w", err)
	}
	return nil
}

// Status returns the pod's latest status.
func (e *Executor) Status(namespace, name string) (v4.TaskGroupStatus, bool) {
	p := e.pod(namespace, name)
	if p == nil {
		return v4.TaskGroupStatus{}, false
	}
	return p.snapshot(), true
}

// List returns every pod the executor knows, ordered by namespace and name.
func (e *Executor) List() []PodRef {
	e.mu.Lock()
	pods := make([]*pod, 0, len(e.pods))
	for _, p := range e.pods {
		pods = append(pods, p)
	}
	e.mu.Unlock()
	out := make([]PodRef, 0, len(pods))
	for _, p := range pods {
		out = append(out, PodRef{Namespace: p.ns, Name: p.name, Status: p.snapshot()})
	}
	slices.SortFunc(out, func(a, b PodRef) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// Logs streams a task's output; task "" is the pod's first task.
func (e *Executor) Logs(ctx context.Context, namespace, name, task string, opts driver.LogOptions) (io.ReadCloser, error) {
	t, err := e.task(namespace, name, task)
	if err != nil {
		return nil, err
	}
	rc, err := t.drv.Logs(ctx, t.id, opts)
	if err != nil {
		return nil, fmt.Errorf("logs of task %s: %w", t.name, err)
	}
	return rc, nil
}

// Action runs "reload" or "restart" on a task, or on every task in order when task is "".
func (e *Executor) Action(ctx context.Context, namespace, name, task, action string) error {
	return e.eachTask(namespace, name, task, action, func(t *taskPlan) error { return t.drv.Action(ctx, t.id, action) })
}

// Signal sends sig to a task's main process, or to every task's in order when task is "".
func (e *Executor) Signal(ctx context.Context, namespace, name, task string, sig syscall.Signal) error {
	what := fmt.Sprintf("signal %d to", int(sig))
	return e.eachTask(namespace, name, task, what, func(t *taskPlan) error { return t.drv.Signal(ctx, t.id, sig) })
}

// eachTask runs do on the named task of a known pod, or on each of its tasks in order
// when task is "", stopping at the first error; what names the deed in errors.
func (e *Executor) eachTask(namespace, name, task, what string, do func(*taskPlan) error) error {
	if task != "" {
		t, err := e.task(namespace, name, task)
		if err != nil {
			return err
		}
		if err := do(t); err != nil {
			return fmt.Errorf("%s task %s: %w", what, t.name, err)
		}
		return nil
	}
	p := e.pod(namespace, name)
	if p == nil {
		return fmt.Errorf("%s/%s: %w", namespace, name, ErrUnknownPod)
	}
	for i := range p.plan.tasks {
		t := &p.plan.tasks[i]
		if t.drv == nil {
			return fmt.Errorf("%s task %s: %s", what, t.name, p.plan.err)
		}
		if err := do(t); err != nil {
			return fmt.Errorf("%s task %s: %w", what, t.name, err)
		}
	}
	return nil
}

// task finds a task of a known pod whose driver is available.
func (e *Executor) task(namespace, name, task string) (*taskPlan, error) {
	p := e.pod(namespace, name)
	if p == nil {
		return nil, fmt.Errorf("%s/%s: %w", namespace, name, ErrUnknownPod)
	}
	if len(p.plan.tasks) == 0 {
		return nil, fmt.Errorf("%s/%s has no tasks", namespace, name)
	}
	t := &p.plan.tasks[0]
	if task != "" {
		t = nil
		for i := range p.plan.tasks {
			if p.plan.tasks[i].name == task {
				t = &p.plan.tasks[i]
			}
		}
		if t == nil {
			return nil, fmt.Errorf("%s/%s has no task %q: %w", namespace, name, task, driver.ErrNotFound)
		}
	}
	if t.drv == nil {
		return nil, fmt.Errorf("task %s: %s", t.name, p.plan.err)
	}
	return t, nil
}

func (e *Executor) pod(namespace, name string) *pod {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pods[podKey(namespace, name)]
}

// Close stops monitoring and health checks and waits for their goroutines. Tasks keep
// running: an agent restart must not kill workloads (it adopts them again). A pod still
// starting is stopped and reported Failed, since half a pod cannot be adopted.
func (e *Executor) Close() {
	e.mu.Lock()
	e.cancel()
	e.mu.Unlock()
	e.wg.Wait()
}
