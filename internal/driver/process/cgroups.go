package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berthhq/berth/internal/driver"
)

// cgroupSystem is which cgroup API the host offers the driver.
type cgroupSystem string

const (
	cgroupNone cgroupSystem = ""
	cgroupV1   cgroupSystem = "v1" // legacy or hybrid layout: one hierarchy per controller
	cgroupV2   cgroupSystem = "v2" // unified hierarchy
)

const unifiedMount = "/sys/fs/cgroup"

// detectCgroups picks the cgroup API; none when the agent is not root (it could not
// create cgroups) or no cgroup filesystem is mounted.
func detectCgroups() cgroupSystem {
	if os.Geteuid() != 0 {
		return cgroupNone
	}
	switch cgroups.Mode() {
	case cgroups.Legacy, cgroups.Hybrid:
		return cgroupV1
	case cgroups.Unified:
		return cgroupV2
	}
	return cgroupNone
}

func validCgroupParent(p string) bool {
	p = strings.Trim(p, "/")
	return p != "" && path.Clean(p) == p && !strings.HasPrefix(p, "..")
}

// taskCgroup is one task's cgroup (in every v1 hierarchy, or the v2 one).
type taskCgroup interface {
	// AddProc moves a process into the cgroup.
	AddProc(pid int) error
	// Procs lists every process in the cgroup and below.
	Procs() ([]int, error)
	// Kill sends SIGKILL to every process in the cgroup.
	Kill()
	// OOMKills is the number of processes the kernel's OOM killer killed in the cgroup;
	// ok is false when the kernel does not count them.
	OOMKills() (n uint64, ok bool)
	// MemFailcnt is how often the memory limit was hit (v1 only).
	MemFailcnt() uint64
	// Delete removes the cgroup; it fails while processes run in it.
	Delete() error
	// Dir is the directory of a controller ("cpu", "memory"); v2 has one for all.
	Dir(controller string) string
}

// cgroupPath is a task's cgroup path below the hierarchies' roots:
// /{parent}/{cluster tag}_{id}, so two clusters' agents on one machine never share a
// task's cgroup (owner.go); /{parent}/{id} without a cluster, as berth named them before.
// A task's state records its path, so tasks started under the older names keep theirs.
func (d *Driver) cgroupPath(id string) string {
	if tag := d.owner.Tag(); tag != "" {
		id = tag + driver.TagSeparator + id
	}
	return "/" + d.cgroupParent + "/" + id
}

// cgroupResources is what a task's cgroup is given: its cpu weight, as cgroup v1
// cpu.shares (v2's cpu.weight is converted from it as runc converts it, so a process
// and a container of the same request weigh alike; 0 leaves the kernel's default), and
// its cpu (cores) and memory (MB) limits, 0 for none.
type cgroupResources struct {
	shares     uint64
	cpu, memMB float64
	// revocable: the task must run at the lowest weight (docs/policy.md, "Revocable
	// capacity"), so it does not run without a cgroup, as a limited one does not.
	revocable bool
}

// resourcesOf is the cgroup resources of task t (driver.Task.CPUShares).
func resourcesOf(t *driver.Task) cgroupResources {
	return cgroupResources{shares: t.CPUShares(), cpu: t.CPULimit, memMB: t.MemoryLimit, revocable: t.Revocable}
}

// createCgroup creates the task's cgroup with its weight and limits. It returns nil (and
// no error) when cgroups are unavailable and neither a limit nor the revocable tier's
// weight is asked for: the task then runs without.
func (d *Driver) createCgroup(id string, r cgroupResources) (taskCgroup, error) {
	required := r.cpu > 0 || r.memMB > 0 || r.revocable
	var (
		cg  taskCgroup
		err error
	)
	p := d.cgroupPath(id)
	switch d.cgroups {
	case cgroupV1:
		cg, err = newCgroupV1(p, r)
	case cgroupV2:
		cg, err = newCgroupV2(p, r)
	default:
		err = errors.New("cgroups are unavailable (the agent must run as root on a host with a cgroup filesystem)")
	}
	if err == nil {
		return cg, nil
	}
	if required {
		return nil, fmt.Errorf("cgroup %s for cpu/memory limits and weight: %w", p, err)
	}
	d.log.Warn("running task without a cgroup", "task", id, "err", err)
	return nil, nil
}

// loadCgroup opens the cgroup a task recorded; nil when it has none or it is gone.
func (d *Driver) loadCgroup(st *taskState) taskCgroup {
	switch cgroupSystem(st.CgroupMode) {
	case cgroupV1:
		if st.Cgroup == "" {
			return nil
		}
		cg, err := cgroup1.Load(cgroup1.StaticPath(st.Cgroup))
		if err != nil {
			return nil
		}
		return wrapV1(cg, st.Cgroup)
	case cgroupV2:
		if st.Cgroup == "" {
			return nil
		}
		m, err := cgroup2.Load(st.Cgroup)
		if err != nil {
			return nil
		}
		return &cgroupV2Task{m: m, dir: filepath.Join(unifiedMount, st.Cgroup)}
	}
	return nil
}

// oomKilled reports whether the kernel OOM-killed something in the task's cgroup. Where
// the kernel does not count OOM kills (old v1), a hit memory limit and a SIGKILLed
// process stand for one.
func (d *Driver) oomKilled(st *taskState, sigkilled bool) bool {
	cg := d.loadCgroup(st)
	if cg == nil {
		return false
	}
	if n, ok := cg.OOMKills(); ok {
		return n > 0
	}
	return sigkilled && cg.MemFailcnt() > 0
}

// --- cgroup v1 ---

type cgroupV1Task struct {
	cg   cgroup1.Cgroup
	dirs map[string]string
	list cgroup1.Name // the hierarchy used to list processes
}

type pather interface{ Path(string) string }

func newCgroupV1(p string, r cgroupResources) (taskCgroup, error) {
	res := &specs.LinuxResources{}
	if r.cpu > 0 || r.shares > 0 {
		res.CPU = &specs.LinuxCPU{}
	}
	if r.shares > 0 {
		res.CPU.Shares = &r.shares
	}
	if r.cpu > 0 {
		quota, period := cfsQuota(r.cpu)
		res.CPU.Quota, res.CPU.Period = &quota, &period
	}
	memMB := r.memMB
	var limit int64
	if memMB > 0 {
		limit = int64(memMB * 1024 * 1024)
		res.Memory = &specs.LinuxMemory{Limit: &limit}
	}
	cg, err := cgroup1.New(cgroup1.StaticPath(p), res)
	if err != nil {
		return nil, err
	}
	t := wrapV1(cg, p)
	// Keep swap off: memory+swap gets the same limit, where the kernel accounts swap.
	if memMB > 0 {
		if _, err := os.Stat(filepath.Join(t.Dir("memory"), "memory.memsw.limit_in_bytes")); err == nil {
			swap := limit
			if err := cg.Update(&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit, Swap: &swap}}); err != nil {
				cg.Delete()
				return nil, fmt.Errorf("memory.memsw.limit_in_bytes: %w", err)
			}
		}
	}
	return t, nil
}

func wrapV1(cg cgroup1.Cgroup, p string) *cgroupV1Task {
	t := &cgroupV1Task{cg: cg, dirs: map[string]string{}}
	for _, s := range cg.Subsystems() {
		if pp, ok := s.(pather); ok {
			t.dirs[string(s.Name())] = pp.Path(p)
		}
	}
	for _, n := range []cgroup1.Name{cgroup1.Freezer, cgroup1.Memory, cgroup1.Pids, cgroup1.Cpu} {
		if _, ok := t.dirs[string(n)]; ok {
			t.list = n
			break
		}
	}
	if t.list == "" && len(cg.Subsystems()) > 0 {
		t.list = cg.Subsystems()[0].Name()
	}
	return t
}

func (t *cgroupV1Task) AddProc(pid int) error { return t.cg.AddProc(uint64(pid)) }

func (t *cgroupV1Task) Procs() ([]int, error) {
	ps, err := t.cg.Processes(t.list, true)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	return out, nil
}

// Kill freezes the cgroup (so nothing forks while we kill), SIGKILLs every process and
// thaws it so they can die. The freeze is bounded: containerd's Freeze waits forever for
// a process stuck in the kernel.
func (t *cgroupV1Task) Kill() {
	fz := t.dirs[string(cgroup1.Freezer)]
	if fz != "" {
		state := filepath.Join(fz, "freezer.state")
		if os.WriteFile(state, []byte("FROZEN"), 0) == nil {
			for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if b, _ := os.ReadFile(state); strings.TrimSpace(string(b)) == "FROZEN" {
					break
				}
			}
		}
		defer os.WriteFile(state, []byte("THAWED"), 0)
	}
	pids, _ := t.Procs()
	killAll(pids)
}

func (t *cgroupV1Task) OOMKills() (uint64, bool) {
	kv := readKV(filepath.Join(t.Dir("memory"), "memory.oom_control"))
	n, ok := kv["oom_kill"]
	return n, ok
}

func (t *cgroupV1Task) MemFailcnt() uint64 {
	b, err := os.ReadFile(filepath.Join(t.Dir("memory"), "memory.failcnt"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (t *cgroupV1Task) Delete() error          { return t.cg.Delete() }
func (t *cgroupV1Task) Dir(ctrl string) string { return t.dirs[ctrl] }

// --- cgroup v2 ---

type cgroupV2Task struct {
	m   *cgroup2.Manager
	dir string
}

func newCgroupV2(p string, r cgroupResources) (taskCgroup, error) {
	res := &cgroup2.Resources{}
	if r.cpu > 0 || r.shares > 0 {
		res.CPU = &cgroup2.CPU{}
	}
	if r.shares > 0 {
		w := driver.CPUWeight(r.shares)
		res.CPU.Weight = &w
	}
	if r.cpu > 0 {
		quota, period := cfsQuota(r.cpu)
		res.CPU.Max = cgroup2.NewCPUMax(&quota, &period)
	}
	if memMB := r.memMB; memMB > 0 {
		limit := int64(memMB * 1024 * 1024)
		res.Memory = &cgroup2.Memory{Max: &limit}
		parent := filepath.Dir(filepath.Join(unifiedMount, p))
		if _, err := os.Stat(filepath.Join(parent, "memory.swap.max")); err == nil {
			zero := int64(0)
			res.Memory.Swap = &zero
		}
	}
	m, err := cgroup2.NewManager(unifiedMount, p, res)
	if err != nil {
		return nil, err
	}
	return &cgroupV2Task{m: m, dir: filepath.Join(unifiedMount, p)}, nil
}

func (t *cgroupV2Task) AddProc(pid int) error { return t.m.AddProc(uint64(pid)) }

func (t *cgroupV2Task) Procs() ([]int, error) {
	ps, err := t.m.Procs(true)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		out = append(out, int(p))
	}
	return out, nil
}

// Kill uses cgroup.kill (Linux 5.14+), else SIGKILLs what it lists.
func (t *cgroupV2Task) Kill() {
	if os.WriteFile(filepath.Join(t.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	pids, _ := t.Procs()
	killAll(pids)
}

func (t *cgroupV2Task) OOMKills() (uint64, bool) {
	n, ok := readKV(filepath.Join(t.dir, "memory.events"))["oom_kill"]
	return n, ok
}

func (t *cgroupV2Task) MemFailcnt() uint64 { return 0 }
func (t *cgroupV2Task) Delete() error      { return t.m.Delete() }
func (t *cgroupV2Task) Dir(string) string  { return t.dir }

// --- helpers ---

// cfsQuota converts cores into a CFS quota per 100 ms period (the kernel's minimum
// quota is 1 ms).
func cfsQuota(cores float64) (int64, uint64) {
	const period = 100000
	quota := int64(cores * period)
	if quota < 1000 {
		quota = 1000
	}
	return quota, period
}

func killAll(pids []int) {
	for _, pid := range pids {
		if pid > 0 && pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// readKV reads a cgroup "key value" file (memory.oom_control, memory.events).
func readKV(file string) map[string]uint64 {
	out := map[string]uint64{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}
