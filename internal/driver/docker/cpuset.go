package docker

import (
	"context"
	"slices"

	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// numaNode is one NUMA node and its online CPUs.
type numaNode struct {
	id   int
	cpus []int
}

// cpuBinding is what a container is bound to: cpuset-cpus and (on NUMA machines)
// cpuset-mems, both in Docker's list syntax; empty strings leave Docker's defaults.
type cpuBinding struct{ cpus, mems string }

// readTopology reads the NUMA nodes from sysfs. A machine (or VM) without node entries
// is one node holding every online CPU.
func readTopology(sysfs string) ([]numaNode, error) {
	paths, _ := filepath.Glob(filepath.Join(sysfs, "devices/system/node/node*/cpulist"))
	var nodes []numaNode
	for _, p := range paths {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "node"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("cpuset: read topology: %w", err)
		}
		cpus, err := parseCPUList(string(b))
		if err != nil {
			return nil, fmt.Errorf("cpuset: %s: %w", p, err)
		}
		if len(cpus) > 0 { // memory-only nodes have no CPUs to bind
			nodes = append(nodes, numaNode{id: id, cpus: cpus})
		}
	}
	if len(nodes) > 0 {
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].id < nodes[j].id })
		return nodes, nil
	}
	b, err := os.ReadFile(filepath.Join(sysfs, "devices/system/cpu/online"))
	if err != nil {
		return nil, fmt.Errorf("cpuset: read topology: %w", err)
	}
	cpus, err := parseCPUList(string(b))
	if err != nil || len(cpus) == 0 {
		return nil, fmt.Errorf("cpuset: bad list of online cpus %q", strings.TrimSpace(string(b)))
	}
	return []numaNode{{id: 0, cpus: cpus}}, nil
}

// chooseCPUs applies BCS's NUMA rules to bind n CPUs (docs/docker.md, Start): more than the machine has is
// an error; with one NUMA node the first free CPUs are taken and memory nodes are left
// alone; otherwise the node prefer (that of the task's GPUs, -1 for none) when it has n
// free CPUs, else a random node among those that have, cpus and memory both from it: a
// container never spans nodes.
func chooseCPUs(nodes []numaNode, bound map[int]bool, n, prefer int, rnd func(int) int) (cpuBinding, error) {
	total := 0
	for _, nd := range nodes {
		total += len(nd.cpus)
	}
	if n > total {
		return cpuBinding{}, fmt.Errorf("cpuset: %d cpus requested, the machine has %d", n, total)
	}
	var fits [][]int
	var fitNodes []int
	most := 0
	for _, nd := range nodes {
		var free []int
		for _, c := range nd.cpus {
			if !bound[c] {
				free = append(free, c)
			}
		}
		most = max(most, len(free))
		if len(free) >= n {
			fits = append(fits, free[:n])
			fitNodes = append(fitNodes, nd.id)
		}
	}
	if len(fits) == 0 {
		if len(nodes) == 1 {
			return cpuBinding{}, fmt.Errorf("cpuset: %d cpus requested, only %d are not bound to other containers", n, most)
		}
		return cpuBinding{}, fmt.Errorf("cpuset: %d cpus requested, no NUMA node has that many free (at most %d; a container never spans nodes)", n, most)
	}
	if len(nodes) == 1 {
		return cpuBinding{cpus: formatCPUList(fits[0])}, nil
	}
	i := slices.Index(fitNodes, prefer)
	if prefer < 0 || i < 0 {
		i = rnd(len(fits))
	}
	return cpuBinding{cpus: formatCPUList(fits[i]), mems: strconv.Itoa(fitNodes[i])}, nil
}

// resolveCPUSet decides a task's binding from its parameters: an explicit cpuset-cpus is
// used as given (checked against the machine's size), cpuset=true binds ceil(request)
// CPUs by the NUMA rules, anything else binds nothing. The caller holds cpusetMu until
// the container exists, so the free CPUs it saw are still free.
func (d *Driver) resolveCPUSet(ctx context.Context, x paramExtras, request float64, preferNUMA int) (cpuBinding, error) {
	if x.cpusetCPUs == "" && !x.cpusetBind {
		return cpuBinding{mems: x.cpusetMems}, nil
	}
	nodes, err := readTopology(d.sysfs)
	if err != nil {
		return cpuBinding{}, err
	}
	if x.cpusetCPUs != "" {
		cpus, err := parseCPUList(x.cpusetCPUs)
		if err != nil {
			return cpuBinding{}, fmt.Errorf("cpuset: cpuset-cpus %q: %w", x.cpusetCPUs, err)
		}
		total := 0
		for _, nd := range nodes {
			total += len(nd.cpus)
		}
		if len(cpus) > total {
			return cpuBinding{}, fmt.Errorf("cpuset: %d cpus requested, the machine has %d", len(cpus), total)
		}
		return cpuBinding{cpus: formatCPUList(cpus), mems: x.cpusetMems}, nil
	}
	n := int(math.Ceil(request))
	if n < 1 {
		n = 1
	}
	bound, err := d.boundCPUs(ctx)
	if err != nil {
		return cpuBinding{}, err
	}
	b, err := chooseCPUs(nodes, bound, n, preferNUMA, rand.IntN)
	if err != nil {
		return cpuBinding{}, err
	}
	if x.cpusetMems != "" {
		b.mems = x.cpusetMems
	}
	return b, nil
}

// boundCPUs is every CPU that a berth container which has not ended is bound to,
// read from their labels: Docker is the only record, so it survives agent restarts.
func (d *Driver) boundCPUs(ctx context.Context) (map[int]bool, error) {
	list, err := d.listLabelled(ctx, d.cpusetLabel)
	if err != nil {
		return nil, d.wrap(err, "cpuset: list bound containers")
	}
	bound := map[int]bool{}
	for _, c := range list {
		if c.State == container.StateExited || c.State == container.StateDead {
			continue
		}
		cpus, _ := parseCPUList(c.Labels[d.cpusetLabel])
		for _, cpu := range cpus {
			bound[cpu] = true
		}
	}
	return bound, nil
}

// parseCPUList reads the kernel's list syntax: "0-3,6,7".
func parseCPUList(s string) ([]int, error) {
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

// formatCPUList writes sorted CPUs in the kernel's list syntax, ranges collapsed.
func formatCPUList(cpus []int) string {
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
