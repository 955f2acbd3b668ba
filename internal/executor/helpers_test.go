package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
)

const (
	testNS       = "ns-a"
	testHostIP   = "10.0.0.7"
	testNode     = "node-1"
	testUnit     = 10 * time.Millisecond
	waitDeadline = 10 * time.Second
)

// recorder keeps every report, per pod, in order.
type recorder struct {
	mu      sync.Mutex
	reports map[string][]v4.TaskGroupStatus
}

func (r *recorder) report(ns, name string, st v4.TaskGroupStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports[ns+"/"+name] = append(r.reports[ns+"/"+name], st)
}

func (r *recorder) all(name string) []v4.TaskGroupStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reports[testNS+"/"+name])
}

// phases returns the reported phases with repeats collapsed.
func (r *recorder) phases(name string) []string {
	var out []string
	for _, st := range r.all(name) {
		if len(out) == 0 || out[len(out)-1] != st.Phase {
			out = append(out, st.Phase)
		}
	}
	return out
}

// wait polls the reports of name until cond holds for the latest one.
func (r *recorder) wait(t *testing.T, name string, what string, cond func(v4.TaskGroupStatus) bool) v4.TaskGroupStatus {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for time.Now().Before(deadline) {
		if rs := r.all(name); len(rs) > 0 && cond(rs[len(rs)-1]) {
			return rs[len(rs)-1]
		}
		time.Sleep(2 * time.Millisecond)
	}
	rs := r.all(name)
	t.Fatalf("%s: timed out waiting for %s; phases %v, last %+v", name, what, r.phases(name), last(rs))
	return v4.TaskGroupStatus{}
}

func (r *recorder) waitPhase(t *testing.T, name, phase string) v4.TaskGroupStatus {
	t.Helper()
	return r.wait(t, name, "phase "+phase, func(st v4.TaskGroupStatus) bool { return st.Phase == phase })
}

func last(rs []v4.TaskGroupStatus) any {
	if len(rs) == 0 {
		return nil
	}
	return rs[len(rs)-1]
}

// harness is an executor over fake drivers.
type harness struct {
	e      *Executor
	proc   *fake.Driver
	docker *fake.Driver
	rec    *recorder
	data   *memData
	dir    string
}

func newHarness(t *testing.T, mod ...func(*Config)) *harness {
	t.Helper()
	h := &harness{
		proc:   fake.New("process"),
		docker: fake.New("docker"),
		rec:    &recorder{reports: map[string][]v4.TaskGroupStatus{}},
		data:   &memData{configs: map[string]*v4.ConfigMap{}, secrets: map[string]*v4.Secret{}},
		dir:    t.TempDir(),
	}
	cfg := Config{
		NodeName:       testNode,
		HostIP:         testHostIP,
		DataDir:        h.dir,
		Drivers:        map[string]driver.Driver{"process": h.proc, "docker": h.docker},
		Data:           h.data,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Report:         h.rec.report,
		PollInterval:   5 * time.Millisecond,
		HealthTimeUnit: testUnit,
		ForceGrace:     time.Second,
	}
	for _, m := range mod {
		m(&cfg)
	}
	h.e = New(cfg)
	t.Cleanup(h.e.Close)
	return h
}

func (h *harness) run(tg *v4.TaskGroup) { h.e.Run(context.Background(), tg) }

// memData is an in-memory DataSource.
type memData struct {
	configs map[string]*v4.ConfigMap
	secrets map[string]*v4.Secret
}

func (d *memData) ConfigMap(_ context.Context, ns, name string) (*v4.ConfigMap, error) {
	if cm, ok := d.configs[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("configmap %s/%s not found", ns, name)
}

func (d *memData) Secret(_ context.Context, ns, name, _ string) (*v4.Secret, error) {
	if s, ok := d.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secret %s/%s not found", ns, name)
}

// containerTG is a task group of containers named names.
func containerTG(name string, names ...string) *v4.TaskGroup {
	tg := &v4.TaskGroup{}
	tg.Metadata.Namespace, tg.Metadata.Name = testNS, name
	tg.Spec.Owner = v4.OwnerRef{Kind: "application", Name: "app"}
	tg.Spec.Node = testNode
	tg.Spec.KillGracePeriod = 3
	tg.Spec.Template.Spec.NetworkMode = "HOST"
	for _, n := range names {
		tg.Spec.Template.Spec.Containers = append(tg.Spec.Template.Spec.Containers, v4.Container{Name: n, Image: "busybox"})
	}
	return tg
}

// processTG is a task group of processes.
func processTG(name string, procs ...v4.ProcessTask) *v4.TaskGroup {
	tg := &v4.TaskGroup{}
	tg.Metadata.Namespace, tg.Metadata.Name = testNS, name
	tg.Spec.Owner = v4.OwnerRef{Kind: "process", Name: "gamesvc"}
	tg.Spec.Node = testNode
	tg.Spec.Index = 2
	tg.Spec.KillGracePeriod = 5
	tg.Spec.Template.Spec.Processes = procs
	return tg
}

func id(name, task string) string { return TaskID(testNS, name, task) }

func taskStatuses(st v4.TaskGroupStatus) []string {
	var out []string
	for _, t := range st.Tasks {
		out = append(out, t.Status)
	}
	return out
}
