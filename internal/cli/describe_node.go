package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// node writes what a node offers and how it may be used.
func (d *describer) node(n *v4.Node) {
	d.kv("Hostname", "%s", orNone(n.Spec.Hostname))
	d.kv("IP", "%s", orNone(n.Spec.IP))
	status := nodeStatus(n)
	var extra []string
	if !n.Status.LastHeartbeat.IsZero() {
		extra = append(extra, "last heartbeat "+n.Status.LastHeartbeat.Format(time.RFC3339)+" ("+age(n.Status.LastHeartbeat, d.now)+" ago)")
	}
	if n.Status.AgentVersion != "" {
		extra = append(extra, "agent "+n.Status.AgentVersion)
	}
	if len(extra) > 0 {
		status += " (" + strings.Join(extra, ", ") + ")"
	}
	d.kv("Status", "%s", status)
	d.kv("Capacity", "%s", resourceSummary(n.Spec.Capacity))
	d.kv("Allocatable", "%s", resourceSummary(n.Spec.Allocatable))
	ranges := make([]string, 0, len(n.Spec.PortRanges))
	for _, r := range n.Spec.PortRanges {
		ranges = append(ranges, fmt.Sprintf("%d-%d", r.Begin, r.End))
	}
	d.kv("Port Ranges", "%s", orNone(strings.Join(ranges, ", ")))
	d.nodeAttributes(&n.Spec.Attributes)
	d.nodeGPUs(n.Spec.GPUs)
	if d.nodeUse != nil {
		d.nodeUsage(n, d.nodeUse)
	}
	if d.nodeMeasure != nil {
		d.nodeMeasured(d.nodeMeasure)
	}
	if len(n.Spec.Taints) == 0 {
		d.kv("Taints", "%s", none)
	}
	for i, t := range n.Spec.Taints { // one per line, aligned like labels
		if i == 0 {
			d.kv("Taints", "%s", taintString(t))
			continue
		}
		d.line(fmt.Sprintf("%-*s%s", keyWidth-2*d.level, "", taintString(t)))
	}
}

func (d *describer) nodeAttributes(a *v4.NodeAttributes) {
	if len(a.Text)+len(a.Scalar)+len(a.Set) == 0 {
		d.kv("Attributes", "%s", none)
		return
	}
	d.section("Attributes", func() {
		for _, k := range slices.Sorted(maps.Keys(a.Text)) {
			d.kv(k, "%s (text)", a.Text[k])
		}
		for _, k := range slices.Sorted(maps.Keys(a.Scalar)) {
			d.kv(k, "%g (scalar)", a.Scalar[k])
		}
		for _, k := range slices.Sorted(maps.Keys(a.Set)) {
			d.kv(k, "%s (set)", strings.Join(a.Set[k], ","))
		}
	})
}

// nodeGPUs writes one line per card: index, model, memory, NUMA node, MIG, health, and
// its links to the other cards by index; under it, when the node's task groups could be
// listed, which of them hold the card (whole, or their shares) or that it is free.
func (d *describer) nodeGPUs(gpus []v4.NodeGPU) {
	if len(gpus) == 0 {
		return
	}
	index := map[string]int{}
	for _, g := range gpus {
		index[g.UUID] = g.Index
	}
	var held map[string]*cardHolders
	if d.nodeUse != nil {
		held = d.nodeUse.byCard()
	}
	d.section("GPUs", func() {
		for _, g := range gpus {
			parts := []string{fmt.Sprintf("%d  %s  %s  %s", g.Index, g.UUID, orNone(g.Model), mib(g.MemoryMiB))}
			if g.NUMANode >= 0 {
				parts = append(parts, fmt.Sprintf("NUMA %d", g.NUMANode))
			}
			if g.MIG {
				parts = append(parts, "MIG")
			}
			if g.Unhealthy != "" {
				parts = append(parts, "UNHEALTHY: "+g.Unhealthy)
			}
			var links []string
			for _, l := range g.Links {
				links = append(links, fmt.Sprintf("%d:%s", index[l.UUID], l.Level))
			}
			slices.Sort(links)
			if len(links) > 0 {
				parts = append(parts, "links "+strings.Join(links, " "))
			}
			d.line(strings.Join(parts, ", "))
			if d.nodeUse != nil {
				use := cardUse(g, held[g.UUID])
				if use == "free" && d.nodeUse.only != "" {
					use = "held by no task group of namespace " + d.nodeUse.only
				}
				d.line("   " + use)
			}
		}
	})
}

// resourceSummary reads like "cpu 8, memory 16GB, disk 97.7GB, nvidia.com/gpu 2".
func resourceSummary(r v4.NodeResources) string {
	parts := []string{fmt.Sprintf("cpu %g", r.CPU), "memory " + megabytes(r.MemoryMB), "disk " + megabytes(r.DiskMB)}
	for _, k := range slices.Sorted(maps.Keys(r.Extended)) {
		parts = append(parts, fmt.Sprintf("%s %g", k, r.Extended[k]))
	}
	return strings.Join(parts, ", ")
}

// taintString is kubectl's "key=value:Effect".
func taintString(t v4.Taint) string { return t.Key + "=" + t.Value + ":" + t.Effect }
