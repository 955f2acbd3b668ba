// Package quota counts what a namespace's workloads ask of the cluster (cpu, memory,
// disk, GPU cards and shares, instances) and judges it against the namespace's resource
// quota; it also applies a namespace's limit defaults to the tasks of a spec
// (docs/policy.md, "Quotas and limit defaults"). It reads specs only: the server gives it
// the stored objects, so usage is recomputed from the stored state rather than kept in a
// counter that could drift.
package quota

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// The resources a quota bounds. Cpu is in cores, memory and disk in MB (as task requests
// are written), gpu in whole cards (nvidia.com/gpu), vcuda-core in hundredths of a card
// and vcuda-memory in 256 MiB units (tencent.com/vcuda-*), instances in task groups.
const (
	CPU         = "cpu"
	Memory      = "memory"
	Disk        = "disk"
	GPU         = "gpu"
	VCUDACore   = "vcuda-core"
	VCUDAMemory = "vcuda-memory"
	Instances   = "instances"
)

// Names are the resources a quota may bound, in the order messages and tables show them.
var Names = []string{CPU, Memory, Disk, GPU, VCUDACore, VCUDAMemory, Instances}

// taskNames are the resources a task's request, limit or maximum may name.
var taskNames = []string{CPU, Memory, Disk, GPU, VCUDACore, VCUDAMemory}

// maxAmount bounds any amount an administrator writes (a million cards or cores is past
// any cluster), so that sums of amounts stay exact in a float64.
const maxAmount = 1e12

// List is an amount per resource name. In a quota, a resource that is absent is not
// bounded and 0 forbids it.
type List map[string]float64

// Add adds o to l (l must not be nil).
func (l List) Add(o List) {
	for k, v := range o {
		l[k] += v
	}
}

// Scaled is l times n.
func (l List) Scaled(n float64) List {
	out := make(List, len(l))
	for k, v := range l {
		out[k] = v * n
	}
	return out
}

// Max is the larger of l and o, resource by resource.
func Max(l, o List) List {
	out := maps.Clone(l)
	if out == nil {
		out = List{}
	}
	for k, v := range o {
		out[k] = max(out[k], v)
	}
	return out
}

// Validate checks a quota or a set of per-task amounts: known names, finite amounts
// between 0 and maxAmount. field prefixes the names in errors ("resources").
func (l List) Validate(field string, names []string) v4.FieldErrors {
	var errs v4.FieldErrors
	for _, k := range slices.Sorted(maps.Keys(l)) {
		v := l[k]
		switch {
		case !slices.Contains(names, k):
			errs = append(errs, v4.FieldError{Field: field + "." + k, Message: "unknown resource; use one of " + strings.Join(names, ", ")})
		case math.IsNaN(v) || v < 0 || v > maxAmount:
			errs = append(errs, v4.FieldError{Field: field + "." + k, Message: fmt.Sprintf("must be between 0 and %g, got %v", float64(maxAmount), v)})
		}
	}
	return errs
}

// Format writes an amount of resource name as people read it.
func Format(name string, v float64) string {
	s := strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
	switch name {
	case Memory, Disk:
		return s + "MB"
	}
	return s
}

// ExceededError refuses a write that takes a namespace past one of its quotas.
type ExceededError struct {
	Namespace string
	Resource  string
	Used      float64 // what the namespace's other objects ask
	Asked     float64 // what the write adds
	Limit     float64
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("namespace %s: %s quota exceeded: %s used + %s asked > %s", e.Namespace, e.Resource,
		Format(e.Resource, e.Used), Format(e.Resource, e.Asked), Format(e.Resource, e.Limit))
}

// Check judges a write that changes ns's usage from used to used+asked against quota:
// the first resource (in Names' order) that the write raises past its bound refuses it.
// A write that lowers or keeps a resource passes even above the bound (a quota set below
// usage with force), so a namespace can always shrink.
func Check(ns string, quota, used, asked List) error {
	for _, k := range Names {
		limit, bounded := quota[k]
		if !bounded || asked[k] <= 0 {
			continue
		}
		if used[k]+asked[k] > limit+1e-9 {
			return &ExceededError{Namespace: ns, Resource: k, Used: used[k], Asked: asked[k], Limit: limit}
		}
	}
	return nil
}

// Over lists the resources whose usage is above quota, as "cpu 9 > 8", for a quota set
// below the usage.
func Over(quota, used List) []string {
	var out []string
	for _, k := range Names {
		if limit, ok := quota[k]; ok && used[k] > limit+1e-9 {
			out = append(out, fmt.Sprintf("%s %s > %s", k, Format(k, used[k]), Format(k, limit)))
		}
	}
	return out
}
