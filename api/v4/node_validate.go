package v4

import (
	"cmp"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Nodes and task groups are system kinds: berth writes them (agents register nodes, the
// scheduler writes task groups), so they are checked here rather than through Parse.

// maxHostNameLen is the DNS limit on a whole name (RFC 1123).
const maxHostNameLen = 253

// hostLabelPattern is one dot-separated label of a DNS host name (RFC 1123, lowercase).
var hostLabelPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// checkHostName reports why s is not a lowercase DNS host name: labels of letters, digits
// and '-' (not at either end), at most 63 characters each, separated by '.'.
func checkHostName(path, s string, errs *FieldErrors) {
	if s == "" {
		errs.add(path, "required")
		return
	}
	if len(s) > maxHostNameLen {
		errs.add(path, "must be at most %d characters, got %d", maxHostNameLen, len(s))
		return
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) > maxNameLen || !hostLabelPattern.MatchString(label) {
			errs.add(path, "must be a DNS host name: lowercase letters, digits, '-' and '.', "+
				"each part 1-%d characters starting and ending with a letter or digit, got %q", maxNameLen, truncate(s, 80))
			return
		}
	}
}

// DefaultNode fills in what an agent may leave out: the hostname is the node's name,
// allocatable cpu, memory and disk are the capacity's where 0 (and extended resources the
// capacity has but allocatable does not name), port ranges are v4.DefaultPortRange, and
// the phase is NotReady until a heartbeat says otherwise. Taint effects are normalised
// ("noschedule" -> "NoSchedule"). It is idempotent.
func DefaultNode(n *Node) {
	if n.APIVersion == "" {
		n.APIVersion = APIVersion
	}
	if n.Kind == "" {
		n.Kind = KindNode
	}
	if n.Spec.Hostname == "" {
		n.Spec.Hostname = n.Metadata.Name
	}
	c, a := &n.Spec.Capacity, &n.Spec.Allocatable
	for _, f := range []struct{ cap, alloc *float64 }{{&c.CPU, &a.CPU}, {&c.MemoryMB, &a.MemoryMB}, {&c.DiskMB, &a.DiskMB}} {
		if *f.alloc == 0 {
			*f.alloc = *f.cap
		}
	}
	for name, v := range c.Extended {
		if _, ok := a.Extended[name]; !ok {
			if a.Extended == nil {
				a.Extended = map[string]float64{}
			}
			a.Extended[name] = v
		}
	}
	if len(n.Spec.PortRanges) == 0 {
		n.Spec.PortRanges = []PortRange{DefaultPortRange}
	}
	for i := range n.Spec.Taints {
		n.Spec.Taints[i].Effect = canon(n.Spec.Taints[i].Effect, TaintNoSchedule, TaintPreferNoSchedule)
	}
	if n.Status.Phase == "" {
		n.Status.Phase = NodeNotReady
	}
	n.Status.Phase = canon(n.Status.Phase, NodeReady, NodeNotReady, NodeLost)
}

// ValidateNode checks a node (after DefaultNode) and returns every problem with the JSON
// path of its field. It is Validate for nodes.
func ValidateNode(n *Node) FieldErrors { return Validate(n) }

// validateNode checks what Validate's common part (apiVersion, metadata) does not.
func validateNode(n *Node, errs *FieldErrors) {
	s := &n.Spec
	checkHostName("spec.hostname", s.Hostname, errs)
	if s.IP != "" {
		if _, err := netip.ParseAddr(s.IP); err != nil {
			errs.add("spec.ip", "must be an IPv4 or IPv6 address, got %q", truncate(s.IP, 80))
		}
	}
	validateNodeResources("spec.capacity", &s.Capacity, errs)
	validateNodeResources("spec.allocatable", &s.Allocatable, errs)
	validatePortRanges("spec.portRanges", s.PortRanges, errs)
	validateNodeAttributes("spec.attributes", &s.Attributes, errs)
	validateNodeGPUs("spec.gpus", s.GPUs, errs)
	for i, t := range s.Taints {
		p := indexPath("spec.taints", i)
		if t.Key == "" {
			errs.add(p+".key", "required")
		} else if len(t.Key) > maxLabelKeyLen || !labelKeyPattern.MatchString(t.Key) {
			errs.add(p+".key", "must be at most %d letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit, got %q", maxLabelKeyLen, truncate(t.Key, 80))
		}
		if t.Value == "" {
			errs.add(p+".value", "required")
		} else if len(t.Value) > maxLabelValueLen || !labelValuePatter.MatchString(t.Value) {
			errs.add(p+".value", "must be at most %d characters without control characters", maxLabelValueLen)
		}
		oneOf(p+".effect", t.Effect, errs, TaintNoSchedule, TaintPreferNoSchedule)
	}
	if n.Status.Phase != "" {
		oneOf("status.phase", n.Status.Phase, errs, NodeReady, NodeNotReady, NodeLost)
	}
	validateBusyPorts("status.busyPorts", n.Status.BusyPorts, errs)
	validateCSIPlugins("status.csiPlugins", n.Status.CSIPlugins, errs)
	if r := n.Status.Revocable; r != nil {
		for _, e := range ValidateRevocableStatus(r) {
			*errs = append(*errs, FieldError{Field: "status.revocable." + e.Field, Message: e.Message})
		}
	}
}

func validateNodeResources(path string, r *NodeResources, errs *FieldErrors) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"cpu", r.CPU}, {"memoryMB", r.MemoryMB}, {"diskMB", r.DiskMB}} {
		if f.v < 0 {
			errs.add(path+"."+f.name, "must not be negative, got %g", f.v)
		}
	}
	for _, name := range sortedStringKeys(r.Extended) {
		if name == "" {
			errs.add(path+".extended", "resource names must not be empty")
		} else if v := r.Extended[name]; v < 0 {
			errs.add(joinKey(path+".extended", name), "must not be negative, got %g", v)
		}
	}
}

// validatePortRanges requires ranges inside 1-65535, begin <= end, and no two ranges
// sharing a port (a port given out twice would be handed to two task groups).
func validatePortRanges(path string, ranges []PortRange, errs *FieldErrors) {
	valid := make([]int, 0, len(ranges)) // indexes of well-formed ranges
	for i, r := range ranges {
		p := indexPath(path, i)
		ok := true
		for _, f := range []struct {
			name string
			v    int
		}{{"begin", r.Begin}, {"end", r.End}} {
			if f.v < 1 || f.v > 65535 {
				errs.add(p+"."+f.name, "must be a port number 1-65535, got %d", f.v)
				ok = false
			}
		}
		if ok && r.Begin > r.End {
			errs.add(p, "begin %d is after end %d", r.Begin, r.End)
			ok = false
		}
		if ok {
			valid = append(valid, i)
		}
	}
	slices.SortFunc(valid, func(a, b int) int { return cmp.Compare(ranges[a].Begin, ranges[b].Begin) })
	for k := 1; k < len(valid); k++ {
		prev, cur := ranges[valid[k-1]], ranges[valid[k]]
		if cur.Begin <= prev.End {
			errs.add(indexPath(path, valid[k]), "overlaps %s (%d-%d)", indexPath(path, valid[k-1]), prev.Begin, prev.End)
		}
	}
}

func validateNodeAttributes(path string, a *NodeAttributes, errs *FieldErrors) {
	for _, name := range slices.Sorted(maps.Keys(a.Text)) {
		if name == "" {
			errs.add(path+".text", "attribute names must not be empty")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Scalar)) {
		if name == "" {
			errs.add(path+".scalar", "attribute names must not be empty")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Set)) {
		if name == "" {
			errs.add(path+".set", "attribute names must not be empty")
			continue
		}
		for i, item := range a.Set[name] {
			if item == "" {
				errs.add(indexPath(joinKey(path+".set", name), i), "must not be empty")
			}
		}
	}
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// CheckNodeName says why name cannot be a node's name, or returns nil.
func CheckNodeName(name string) error {
	var errs FieldErrors
	checkHostName("nodeName", name, &errs)
	if len(errs) > 0 {
		return errs
	}
	return nil
}
