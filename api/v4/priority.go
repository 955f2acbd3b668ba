package v4

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"
)

// Priorities and preemption (docs/policy.md, "Priorities and preemption"). A
// PriorityClass is a cluster-wide object only administrators write; workloads and jobs
// name one in spec.priorityClassName, and the server records the class's value and
// policy on the spec (spec.priority, spec.preemptionPolicy) and on every task group the
// controllers create from it.

// KindPriorityClass is the kind of priority classes. It is not one of the namespaced
// kinds of Kinds: its objects have their own routes (/v1/priorityclasses).
const KindPriorityClass Kind = "priorityclass"

// Preemption policies (Kubernetes' spelling).
const (
	PreemptLowerPriority = "PreemptLowerPriority"
	PreemptNever         = "Never"
)

// Priority bounds. Values above MaxUserPriority are reserved for system classes (as in
// Kubernetes): only an administrator may create such a class or set spec.priority.
const (
	MaxUserPriority   = 1_000_000_000
	MaxSystemPriority = 2_000_000_000
	MinPriority       = -2_147_483_648
)

// PriorityClass maps a name to a priority value.
type PriorityClass struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	// Value is the priority: higher values are placed first and may preempt lower ones.
	Value int `json:"value"`
	// PreemptionPolicy is PreemptLowerPriority (default) or Never: a Never class waits in
	// priority order but never evicts anything.
	PreemptionPolicy string `json:"preemptionPolicy,omitempty"`
	// GlobalDefault makes the class the one of every workload that names none; at most
	// one class may have it.
	GlobalDefault bool   `json:"globalDefault,omitempty"`
	Description   string `json:"description,omitempty"`
}

// GetMeta returns the object's metadata.
func (p *PriorityClass) GetMeta() *ObjectMeta { return &p.Metadata }

// Preempts reports whether the class's workloads may evict lower priorities.
func (p *PriorityClass) Preempts() bool { return p.PreemptionPolicy != PreemptNever }

// DisruptionBudget bounds how many instances of a workload preemption may take down at
// once (Kubernetes' PodDisruptionBudget maxUnavailable, per workload).
type DisruptionBudget struct {
	// MaxUnavailable is how many of the workload's instances may be not running at once
	// for a preemption to evict one more; 0 forbids evicting any.
	MaxUnavailable int `json:"maxUnavailable"`
}

// Scheduling is what a workload or job says about its place in the queue: the class it
// names and, recorded by the server at admission, the class's value and policy.
type Scheduling struct {
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Priority is the resolved value; a user may not set it other than to the class's
	// value (administrators may).
	Priority *int `json:"priority,omitempty"`
	// PreemptionPolicy is the class's policy, recorded at admission.
	PreemptionPolicy string            `json:"preemptionPolicy,omitempty"`
	DisruptionBudget *DisruptionBudget `json:"disruptionBudget,omitempty"`
	// Tier is "" (guaranteed) or TierRevocable: the instances run on capacity lent
	// by idle reservations and are evicted first (docs/policy.md, "Revocable capacity").
	Tier string `json:"tier,omitempty"`
}

// PriorityValue is the resolved priority (0 without one), clamped to the valid range.
func (s *Scheduling) PriorityValue() int32 {
	if s == nil || s.Priority == nil {
		return 0
	}
	return int32(min(max(*s.Priority, MinPriority), MaxSystemPriority))
}

// MayPreempt reports whether the workload may evict lower priorities.
func (s *Scheduling) MayPreempt() bool { return s != nil && s.PreemptionPolicy != PreemptNever }

var priorityClassName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

// ValidPriorityClassName reports whether name can name a priority class.
func ValidPriorityClassName(name string) bool { return priorityClassName.MatchString(name) }

// Validate checks a priority class as an administrator sends it.
func (p *PriorityClass) Validate() FieldErrors {
	var fe FieldErrors
	if !priorityClassName.MatchString(p.Metadata.Name) {
		fe = append(fe, FieldError{Field: "metadata.name", Message: "lowercase letters, digits, '-' and '.', at most 253, starting and ending with a letter or digit"})
	}
	if p.Metadata.Namespace != "" {
		fe = append(fe, FieldError{Field: "metadata.namespace", Message: "priority classes are cluster-wide: leave it out"})
	}
	if p.Value > MaxSystemPriority || p.Value < MinPriority {
		fe = append(fe, FieldError{Field: "value", Message: fmt.Sprintf("from %d to %d, got %d", MinPriority, MaxSystemPriority, p.Value)})
	}
	switch p.PreemptionPolicy {
	case "", PreemptLowerPriority, PreemptNever:
	default:
		fe = append(fe, FieldError{Field: "preemptionPolicy", Message: fmt.Sprintf("%q is neither %s nor %s", p.PreemptionPolicy, PreemptLowerPriority, PreemptNever)})
	}
	if len(p.Description) > 1024 {
		fe = append(fe, FieldError{Field: "description", Message: "at most 1024 bytes"})
	}
	return fe
}

// ValidateScheduling checks the scheduling fields of a spec; path is their parent
// ("spec").
func ValidateScheduling(s *Scheduling, path string) FieldErrors {
	if s == nil {
		return nil
	}
	var fe FieldErrors
	if s.PriorityClassName != "" && !priorityClassName.MatchString(s.PriorityClassName) {
		fe = append(fe, FieldError{Field: path + ".priorityClassName", Message: fmt.Sprintf("%q is not a priority class name", s.PriorityClassName)})
	}
	if s.Priority != nil && (*s.Priority > MaxSystemPriority || *s.Priority < MinPriority) {
		fe = append(fe, FieldError{Field: path + ".priority", Message: fmt.Sprintf("from %d to %d, got %d", MinPriority, MaxSystemPriority, *s.Priority)})
	}
	switch s.PreemptionPolicy {
	case "", PreemptLowerPriority, PreemptNever:
	default:
		fe = append(fe, FieldError{Field: path + ".preemptionPolicy", Message: fmt.Sprintf("%q is neither %s nor %s", s.PreemptionPolicy, PreemptLowerPriority, PreemptNever)})
	}
	if b := s.DisruptionBudget; b != nil && b.MaxUnavailable < 0 {
		fe = append(fe, FieldError{Field: path + ".disruptionBudget.maxUnavailable", Message: fmt.Sprintf("must be 0 or more, got %d", b.MaxUnavailable)})
	}
	fe = append(fe, validateTier(s.Tier, path)...)
	return fe
}

// PriorityClassList is the answer of GET /v1/priorityclasses.
type PriorityClassList struct {
	Kind  string           `json:"kind"`
	Items []*PriorityClass `json:"items"`
}

// PreemptedByAnnotation is set on a task group that a preemption stops: the preemptor
// ("application ns/name instance 2, priority 1000"). Its owner treats the run, once it
// ended, as failed: its restart policy decides whether it is placed again.
const PreemptedByAnnotation = "berth.io/preempted-by"

// PreemptorAnnotation is set with PreemptedByAnnotation: the preemptor as
// "kind/namespace/name", so that its controller looks again as soon as a victim ends.
const PreemptorAnnotation = "berth.io/preemptor"

// Nomination is an instance whose preemption was decided: the node it will go to and
// the task groups stopped for it. The controller records it in the workload's status
// before it stops the victims, so that a new leader finds it, keeps the node for it, and
// chooses no other victims.
type Nomination struct {
	Index int    `json:"index"`
	Node  string `json:"node"`
	// Victims identify the task groups stopped for it by VictimID, not by name: the
	// preemptor's readers learn nothing of other namespaces' workloads.
	Victims []string  `json:"victims"`
	At      time.Time `json:"at"`
	// GPUs are the cards held for the instance on Node.
	GPUs []TaskGPU `json:"gpus,omitempty"`
	// Step is the node ID of a workflow's step: a step is no instance, so its Index is
	// only the slot its hold is known by in the scheduler, unique among the workflow's
	// nominations.
	Step string `json:"step,omitempty"`
	// Hold is the room a step's nomination holds on Node. An instance's or a run's is
	// its owner's spec, but a step's is its template substituted with its inputs, which
	// only the workflow's pass computes: kept here, any server holds it from the status
	// alone (a new leader before its first placement, a plan). Nil but for steps.
	Hold *NominationHold `json:"hold,omitempty"`
}

// NominationHold is the room a step's nomination holds: what the step's task group
// asks (before the executor's overhead), its fixed host ports and its priority.
type NominationHold struct {
	Resources NodeResources `json:"resources"`
	Ports     []int         `json:"ports,omitempty"`
	Priority  int32         `json:"priority"`
}

func (h *NominationHold) equal(o *NominationHold) bool {
	if h == nil || o == nil {
		return h == o
	}
	r, q := h.Resources, o.Resources
	return r.CPU == q.CPU && r.MemoryMB == q.MemoryMB && r.DiskMB == q.DiskMB && maps.Equal(r.Extended, q.Extended) &&
		slices.Equal(h.Ports, o.Ports) && h.Priority == o.Priority
}

// MaxNominations bounds a workload's nominations (and so the instances it preempts for
// at once).
const MaxNominations = 16

// equalNominations compares two lists of nominations.
func equalNominations(a, b []Nomination) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Index != b[i].Index || a[i].Step != b[i].Step || a[i].Node != b[i].Node || !a[i].At.Equal(b[i].At) || !slices.Equal(a[i].Victims, b[i].Victims) ||
			len(a[i].GPUs) != len(b[i].GPUs) || !a[i].Hold.equal(b[i].Hold) {
			return false
		}
	}
	return true
}

// VictimID is how a nomination records a victim: the first 16 hex digits of the SHA-256
// of its namespace/name.
func VictimID(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return hex.EncodeToString(sum[:8])
}
