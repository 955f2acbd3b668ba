package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/stepio"
)

// A workflow step is a task group with spec.step (docs/workflows.md, "Inputs and
// outputs"): its inputs are staged before any task starts, and once its main task has
// exited its outputs are collected before the other tasks are stopped; the task group's
// terminal status carries the result (status.step), always collected, with an error
// when staging or collection failed or the step ended otherwise.

// stepCollectTimeout bounds a step's collection (artifacts up to a gigabyte each).
const stepCollectTimeout = 30 * time.Minute

// planStep records tg's step and its main task in p.
func (p *podPlan) planStep(tg *v4.TaskGroup) {
	p.step, p.main = tg.Spec.Step, -1
	if p.step == nil {
		return
	}
	for i := range p.tasks {
		if p.tasks[i].name == p.step.Main {
			p.main = i
		}
	}
	if p.main < 0 && p.err == nil {
		p.err = fmt.Errorf("spec.step.main %q names no task of the pod", p.step.Main)
	}
}

// stepDir holds a step's staged container inputs and the agent's temporary files.
func (p *podPlan) stepDir() string { return p.subdir("step") }

// stepStore is the server's artifact routes for the pod.
type stepStore struct {
	a        StepArtifacts
	ns, name string
}

var errNoArtifacts = errors.New("this agent has no artifact repository route (not connected to a server)")

func (s stepStore) Get(ctx context.Context, input string) (io.ReadCloser, error) {
	if s.a == nil {
		return nil, errNoArtifacts
	}
	return s.a.AgentGetArtifact(ctx, s.ns, s.name, input)
}

func (s stepStore) Put(ctx context.Context, name string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error) {
	if s.a == nil {
		return v4.StoredArtifact{}, errNoArtifacts
	}
	return s.a.AgentPutArtifact(ctx, s.ns, s.name, name, body, size)
}

func (p *pod) stepStore() stepStore {
	return stepStore{a: p.e.cfg.StepArtifacts, ns: p.ns, name: p.name}
}

func (e *Executor) fetchPolicy() *stepio.Policy {
	if e.cfg.StepFetch != nil {
		return e.cfg.StepFetch
	}
	return &stepio.Policy{}
}

// stageInputs stages the step's inputs for the main task, prepared as t: a process's
// under its work dir (the pod's), through an os.Root of it; a container's in the step
// directory, each bound into the container at its path.
func (p *pod) stageInputs(ctx context.Context, t *driver.Task) error {
	step := p.plan.step
	if step == nil || len(step.Inputs) == 0 {
		return nil
	}
	dir := p.plan.stepDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("stage inputs: %w", err)
	}
	s := &stepio.Stager{Policy: p.e.fetchPolicy(), Store: p.stepStore(), TmpDir: filepath.Join(dir, "tmp")}
	var root *os.Root
	if t.Process != nil {
		work, err := p.processWorkDir(t)
		if err != nil {
			return fmt.Errorf("stage inputs: %w", err)
		}
		if root, err = os.OpenRoot(work); err != nil {
			return fmt.Errorf("stage inputs: %w", err)
		}
		defer root.Close()
	}
	for i, in := range step.Inputs {
		var err error
		if root != nil {
			err = s.Stage(ctx, in, root, in.Path)
		} else {
			err = p.stageContainerInput(ctx, s, i, in, t)
		}
		if err != nil {
			return fmt.Errorf("stage input %s: %w", in.Name, err)
		}
	}
	return nil
}

// stageContainerInput stages input i in step/in/<i>/data and binds it at its path.
func (p *pod) stageContainerInput(ctx context.Context, s *stepio.Stager, i int, in v4.StepInput, t *driver.Task) error {
	target := path.Clean("/" + in.Path)
	if v4.HasDotDot(in.Path) || target == "/" {
		return fmt.Errorf("path %q: not a path in the container", in.Path)
	}
	dir := filepath.Join(p.plan.stepDir(), "in", strconv.Itoa(i))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := s.Stage(ctx, in, root, "data"); err != nil {
		return err
	}
	if _, err := root.Lstat("data"); errors.Is(err, os.ErrNotExist) {
		return nil // an optional input that is missing
	}
	t.Setup.Volumes = append(t.Setup.Volumes, driver.Mount{HostPath: filepath.Join(dir, "data"), ContainerPath: target})
	return nil
}

// processWorkDir is a process task's work dir, which must be the pod's own: inputs are
// written and outputs read there, and nowhere else on the node.
func (p *pod) processWorkDir(t *driver.Task) (string, error) {
	work := t.Process.WorkPath
	if work == "" {
		work = t.WorkBaseDir
	}
	if filepath.Clean(work) != filepath.Clean(p.plan.subdir("work")) {
		return "", fmt.Errorf("a step's process must run in the pod's work dir (no workPath), not %s", work)
	}
	return work, nil
}

// collectStep collects the step's outputs once main task i ended with st (exitCode),
// unless a result is known already (collected before an agent restart). It reports
// false when the executor closed meanwhile: the pod must not end, so that the next
// agent collects again.
func (p *pod) collectStep(ctx context.Context, i int, exitCode int) bool {
	if p.plan.step == nil || p.stepResult() != nil {
		return true
	}
	if i != p.plan.main {
		p.setStepResult(&v4.StepResult{Collected: true, ExitCode: -1,
			Error: fmt.Sprintf("task %s ended before the main task %s", p.plan.tasks[i].name, p.plan.step.Main)})
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, stepCollectTimeout)
	defer cancel()
	// A kill (the workflow stopped) ends a collection in progress; the goroutine ends
	// with the collection.
	go func() {
		select {
		case <-p.killCh:
			cancel()
		case <-cctx.Done():
		}
	}()
	tp := &p.plan.tasks[i]
	c := &stepio.Collector{Store: p.stepStore(), TmpDir: filepath.Join(p.plan.stepDir(), "tmp")}
	logs := func(ctx context.Context, stdout bool) (io.ReadCloser, error) {
		o := driver.LogOptions{}
		if stdout {
			o.Stream = driver.StreamStdout
		}
		return tp.drv.Logs(ctx, tp.id, o)
	}
	src, closeSrc, err := p.stepSource(tp)
	var res v4.StepResult
	if err != nil {
		res = v4.StepResult{Collected: true, ExitCode: exitCode, Error: "collect outputs: " + err.Error()}
	} else {
		res = c.Collect(cctx, p.plan.step, src, logs, exitCode)
		closeSrc()
	}
	if ctx.Err() != nil {
		return false
	}
	if res.Error != "" {
		p.e.log.Warn("step outputs", "namespace", p.ns, "name", p.name, "err", res.Error)
	}
	p.setStepResult(&res)
	return true
}

// stepSource is where the main task's files are read: a process's work dir through an
// os.Root, a container's through its driver (confined to the container).
func (p *pod) stepSource(tp *taskPlan) (stepio.Source, func(), error) {
	if tp.process != nil {
		root, err := os.OpenRoot(p.plan.subdir("work"))
		if err != nil {
			return nil, nil, err
		}
		return stepio.RootSource{Root: root}, func() { root.Close() }, nil
	}
	fr, ok := tp.drv.(driver.FileReader)
	if !ok {
		return nil, nil, fmt.Errorf("the %s driver cannot read a container's files", tp.driverName())
	}
	return stepio.TarSource{Open: func(ctx context.Context, p string) (io.ReadCloser, error) {
		return fr.ReadFiles(ctx, tp.id, p)
	}}, func() {}, nil
}

func (p *pod) stepResult() *v4.StepResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.step
}

func (p *pod) setStepResult(r *v4.StepResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step = r
}

// finalStep is the step result an ending reports: the collected one, else one that
// says why the step ended without its outputs (a failed start or staging, a kill).
func (p *pod) finalStep(why string) *v4.StepResult {
	if p.plan.step == nil {
		return nil
	}
	if r := p.stepResult(); r != nil {
		return r
	}
	if strings.TrimSpace(why) == "" {
		why = "the step ended before its main task"
	}
	return &v4.StepResult{Collected: true, ExitCode: -1, Error: why}
}
