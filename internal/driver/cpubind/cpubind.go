// Package cpubind decides which CPUs (and, on NUMA machines, which memory node) a
// container is bound to, by BCS's rules (docs/docker.md, Start), for every container
// driver: the Docker and containerd drivers differ only in where they record the CPUs
// their running containers hold, which they hand in as the bound set.
package cpubind

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/berthhq/berth/internal/driver"
)

// Node is one NUMA node and its online CPUs.
type Node struct {
	ID   int
	CPUs []int
}

// Binding is what a container is bound to: cpuset-cpus and (on NUMA machines)
// cpuset-mems, both in the kernel's list syntax; empty strings bind nothing.
type Binding struct{ CPUs, Mems string }

// Request is what a task's parameters ask: cpuset=true (Bind: ceil(CPURequest) CPUs
// by the NUMA rules), an explicit cpuset-cpus or cpuset-mems. PreferNUMA is the node of
// the task's GPUs (PreferredNUMA), -1 for none.
type Request struct {
	Bind       bool
	CPUs       string
	Mems       string
	CPURequest float64
	PreferNUMA int
}

// Binds reports whether the request binds CPUs: the caller then holds its lock from
// Resolve until the container that records them exists, so two starts never pick the
// same free CPUs.
func (r Request) Binds() bool { return r.Bind || r.CPUs != "" }

// Resolve decides a task's binding: an explicit cpuset-cpus is used as given (checked
// against the machine's size), cpuset=true binds ceil(request) CPUs by the NUMA rules
// among those bound does not return, anything else binds nothing but an explicit
// cpuset-mems. The topology is read from sysfs ("/sys"; tests give a tree).
func Resolve(sysfs string, r Request, bound func() (map[int]bool, error)) (Binding, error) {
	if !r.Binds() {
		return Binding{Mems: r.Mems}, nil
	}
	nodes, err := ReadTopology(sysfs)
	if err != nil {
		return Binding{}, err
	}
	if r.CPUs != "" {
		cpus, err := ParseList(r.CPUs)
		if err != nil {
			return Binding{}, fmt.Errorf("cpuset: cpuset-cpus %q: %w", r.CPUs, err)
		}
		if total := countCPUs(nodes); len(cpus) > total {
			return Binding{}, fmt.Errorf("cpuset: %d cpus requested, the machine has %d", len(cpus), total)
		}
		return Binding{CPUs: FormatList(cpus), Mems: r.Mems}, nil
	}
	n := max(int(math.Ceil(r.CPURequest)), 1)
	taken, err := bound()
	if err != nil {
		return Binding{}, err
	}
	b, err := Choose(nodes, taken, n, r.PreferNUMA, rand.IntN)
	if err != nil {
		return Binding{}, err
	}
	if r.Mems != "" {
		b.Mems = r.Mems
	}
	return b, nil
}

func countCPUs(nodes []Node) int {
	total := 0
	for _, nd := range nodes {
		total += len(nd.CPUs)
	}
	return total
}

// ReadTopology reads the NUMA nodes from sysfs. A machine (or VM) without node entries
// is one node holding every online CPU.
func ReadTopology(sysfs string) ([]Node, error) {
	paths, _ := filepath.Glob(filepath.Join(sysfs, "devices/system/node/node*/cpulist"))
	var nodes []Node
	for _, p := range paths {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "node"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("cpuset: read topology: %w", err)
		}
		cpus, err := ParseList(string(b))
		if err != nil {
			return nil, fmt.Errorf("cpuset: %s: %w", p, err)
		}
		if len(cpus) > 0 { // memory-only nodes have no CPUs to bind
			nodes = append(nodes, Node{ID: id, CPUs: cpus})
		}
	}
	if len(nodes) > 0 {
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
		return nodes, nil
	}
	b, err := os.ReadFile(filepath.Join(sysfs, "devices/system/cpu/online"))
	if err != nil {
		return nil, fmt.Errorf("cpuset: read topology: %w", err)
	}
	cpus, err := ParseList(string(b))
	if err != nil || len(cpus) == 0 {
		return nil, fmt.Errorf("cpuset: bad list of online cpus %q", strings.TrimSpace(string(b)))
	}
	return []Node{{ID: 0, CPUs: cpus}}, nil
}

// Choose applies BCS's NUMA rules to bind n CPUs: more than the machine has is an
// error; with one NUMA node the first free CPUs are taken and memory nodes are left
// alone; otherwise the node prefer (that of the task's GPUs, -1 for none) when it has n
// free CPUs, else a random node (rnd) among those that have, cpus and memory both from
// it: a container never spans nodes.
func Choose(nodes []Node, bound map[int]bool, n, prefer int, rnd func(int) int) (Binding, error) {
	if total := countCPUs(nodes); n > total {
		return Binding{}, fmt.Errorf("cpuset: %d cpus requested, the machine has %d", n, total)
	}
	var fits [][]int
	var fitNodes []int
	most := 0
	for _, nd := range nodes {
		var free []int
		for _, c := range nd.CPUs {
			if !bound[c] {
				free = append(free, c)
			}
		}
		most = max(most, len(free))
		if len(free) >= n {
			fits = append(fits, free[:n])
			fitNodes = append(fitNodes, nd.ID)
		}
	}
	if len(fits) == 0 {
		if len(nodes) == 1 {
			return Binding{}, fmt.Errorf("cpuset: %d cpus requested, only %d are not bound to other containers", n, most)
		}
		return Binding{}, fmt.Errorf("cpuset: %d cpus requested, no NUMA node has that many free (at most %d; a container never spans nodes)", n, most)
	}
	if len(nodes) == 1 {
		return Binding{CPUs: FormatList(fits[0])}, nil
	}
	i := slices.Index(fitNodes, prefer)
	if prefer < 0 || i < 0 {
		i = rnd(len(fits))
	}
	return Binding{CPUs: FormatList(fits[i]), Mems: strconv.Itoa(fitNodes[i])}, nil
}

// PreferredNUMA is the NUMA node of the task's cards when they share one, else -1: CPUs
// bound to the task are taken from it.
func PreferredNUMA(gpus []driver.GPU) int {
	if len(gpus) == 0 {
		return -1
	}
	n := gpus[0].NUMANode
	for _, g := range gpus[1:] {
		if g.NUMANode != n {
			return -1
		}
	}
	return n
}

// ParseList reads the kernel's list syntax: "0-3,6,7".
func ParseList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad cpu list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil, fmt.Errorf("bad cpu list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// FormatList writes sorted CPUs in the kernel's list syntax, ranges collapsed.
func FormatList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
