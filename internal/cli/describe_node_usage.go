package cli

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// nodeUse is what the task groups on a node hold, as far as the caller may see them.
type nodeUse struct {
	tgs []*v4.TaskGroup // those that hold resources, by namespace and name
	// only names the one namespace listed when the caller may not list every one: the
	// cards and sums then leave out what the other namespaces hold.
	only string
}

// nodeTaskGroups lists the task groups bound to a node with the server's node filter:
// the server scans, only the node's cross the network (a node list's usage has sums, not
// who holds each card). A caller limited to namespaces gets a 403 for every namespace: it
// is shown its own namespace's instead, and told so.
func nodeTaskGroups(ctx context.Context, o *options, c *client.Client, node string) (*nodeUse, error) {
	f := client.ListFilter{Node: node}
	use := &nodeUse{}
	objs, err := c.ListFiltered(ctx, v4.KindTaskGroup, "", f)
	if client.StatusOf(err) == http.StatusForbidden && o.namespace != "" {
		use.only = o.namespace
		objs, err = c.ListFiltered(ctx, v4.KindTaskGroup, o.namespace, f)
	}
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		// The server filters by node already; the check keeps a wrong answer out.
		if tg, ok := obj.(*v4.TaskGroup); ok && tg.Spec.Node == node && holdsResources(tg.Status.Phase) {
			use.tgs = append(use.tgs, tg)
		}
	}
	slices.SortFunc(use.tgs, func(a, b *v4.TaskGroup) int {
		return strings.Compare(a.Metadata.Namespace+"/"+a.Metadata.Name, b.Metadata.Namespace+"/"+b.Metadata.Name)
	})
	return use, nil
}

// holdsResources is the scheduler's rule (internal/scheduler, holdsResources): a task
// group that ended frees its node's resources, ports and cards.
func holdsResources(phase string) bool {
	switch phase {
	case v4.StatusFinish, v4.StatusFailed, v4.StatusKilled, v4.StatusError:
		return false
	}
	return true
}

// cardHolders are the shares of one card, by the task group and task that hold them.
type cardHolders struct {
	cores, memMiB int
	holders       []string
}

// byCard sums, per card UUID, what the task groups hold.
func (u *nodeUse) byCard() map[string]*cardHolders {
	out := map[string]*cardHolders{}
	for _, tg := range u.tgs {
		for _, g := range tg.Spec.GPUs {
			h := out[g.UUID]
			if h == nil {
				h = &cardHolders{}
				out[g.UUID] = h
			}
			h.cores += g.Cores
			h.memMiB += g.MemoryMiB
			who := tg.Metadata.Namespace + "/" + tg.Metadata.Name + " (" + g.Task
			if !g.Whole() {
				who += fmt.Sprintf(" %d%%, %s", g.Cores, mib(g.MemoryMiB))
			}
			h.holders = append(h.holders, who+")")
		}
	}
	return out
}

// cardUse reads like "whole card: ns/tg (task)", "60% of the cores, 8GiB of 40GiB:
// ns/a (x 30%, 4GiB), ns/b (y 30%, 4GiB)" or "free".
func cardUse(g v4.NodeGPU, h *cardHolders) string {
	switch {
	case h == nil:
		return "free"
	case h.cores >= v4.CoresPerGPU && len(h.holders) == 1:
		return "whole card: " + h.holders[0]
	}
	return fmt.Sprintf("%d%% of the cores, %s of %s: %s", h.cores, mib(h.memMiB), mib(g.MemoryMiB), strings.Join(h.holders, ", "))
}

// nodeUsage writes the sums of what the node's task groups hold against what it may
// allocate, then the task groups themselves, as kubectl's "Allocated resources" and
// "Non-terminated Pods".
func (d *describer) nodeUsage(n *v4.Node, u *nodeUse) {
	var cpu, mem, disk float64
	ext := map[string]float64{}
	rows := make([][]string, 0, len(u.tgs))
	for _, tg := range u.tgs {
		r := tg.Spec.Resources
		cpu, mem, disk = cpu+r.CPU, mem+r.MemoryMB, disk+r.DiskMB
		for k, v := range r.Extended {
			ext[k] += v
		}
		rows = append(rows, []string{tg.Metadata.Namespace, tg.Metadata.Name, orNone(tg.Status.Phase),
			strconv.FormatFloat(r.CPU, 'f', -1, 64), megabytes(r.MemoryMB), planGPUs(tg.Spec.GPUs), age(tg.Metadata.CreationTimestamp, d.now)})
	}
	a := n.Spec.Allocatable
	parts := []string{"cpu " + ofTotal(cpu, a.CPU, strconv.FormatFloat(cpu, 'f', -1, 64), strconv.FormatFloat(a.CPU, 'f', -1, 64)),
		"memory " + ofTotal(mem, a.MemoryMB, megabytes(mem), megabytes(a.MemoryMB)),
		"disk " + ofTotal(disk, a.DiskMB, megabytes(disk), megabytes(a.DiskMB))}
	for _, k := range slices.Sorted(maps.Keys(a.Extended)) {
		if len(n.Spec.GPUs) > 0 && isGPUResource(k) {
			continue // counted card by card below, as the scheduler does
		}
		parts = append(parts, k+" "+ofTotal(ext[k], a.Extended[k], strconv.FormatFloat(ext[k], 'f', -1, 64), strconv.FormatFloat(a.Extended[k], 'f', -1, 64)))
	}
	if len(n.Spec.GPUs) > 0 {
		parts = append(parts, cardsInUse(n.Spec.GPUs, u.byCard()))
	}
	scope := ""
	if u.only != "" {
		scope = " (namespace " + u.only + " only: you may not list the others)"
	}
	d.kv("Allocated", "%s%s", strings.Join(parts, ", "), scope)
	d.nodeRevocable(n)
	if len(rows) == 0 {
		d.kv("Task Groups", "%s%s", none, scope)
		return
	}
	d.section("Task Groups"+scope, func() {
		d.table([]string{"NAMESPACE", "NAME", "PHASE", "CPU", "MEMORY", "GPUS", "AGE"}, rows)
	})
}

// ofTotal reads like "2.5 of 8 (31%)".
func ofTotal(used, total float64, usedS, totalS string) string {
	if total <= 0 {
		return usedS + " of " + totalS
	}
	return fmt.Sprintf("%s of %s (%d%%)", usedS, totalS, int(used*100/total))
}

// isGPUResource reports the extended resources that a node with a card inventory
// accounts card by card (internal/scheduler, isGPUResource).
func isGPUResource(name string) bool {
	switch name {
	case v4.ResourceGPU, v4.ResourceVCUDACore, v4.ResourceVCUDAMemory:
		return true
	}
	return false
}

// cardsInUse reads like "GPUs 2 of 3 in use (1 whole, 1 shared)".
func cardsInUse(gpus []v4.NodeGPU, held map[string]*cardHolders) string {
	whole, shared := 0, 0
	for _, g := range gpus {
		switch h := held[g.UUID]; {
		case h == nil:
		case h.cores >= v4.CoresPerGPU && len(h.holders) == 1:
			whole++
		default:
			shared++
		}
	}
	return fmt.Sprintf("GPUs %d of %d in use (%d whole, %d shared)", whole+shared, len(gpus), whole, shared)
}
