package v4

import (
	"fmt"
	"math"
	"time"
)

// Revocable capacity (docs/policy.md, "Revocable capacity"): a workload of the revocable
// tier runs on capacity that non-revocable task groups reserve but do not use, as the
// node's agent measures it. Its task groups are marked Revocable, the scheduler never
// lets them hold capacity a non-revocable placement needs, and the agent evicts them
// first when the owners' use rises.

// TierRevocable is spec.tier of a workload whose instances run on lent capacity.
const TierRevocable = "revocable"

// Revocable reports whether a spec asks for the revocable tier.
func (s *Scheduling) Revocable() bool { return s != nil && s.Tier == TierRevocable }

// RevocableStatus is a node's lending report, sent by its agent (PUT
// /v1/agent/nodes/{name}/revocable) every few seconds: what the node's non-revocable
// instances use now, what its revocable ones use, and the operator's bounds (agent
// flags). The scheduler lends nothing on a node whose report is older than
// RevocableStale or missing.
type RevocableStatus struct {
	Time time.Time `json:"time"`
	// UsedCPU and UsedMemoryMB are the measured use of the node's non-revocable
	// instances (cores over the agent's sampling window, resident memory).
	UsedCPU      float64 `json:"usedCPU"`
	UsedMemoryMB float64 `json:"usedMemoryMB"`
	// RevocableCPU and RevocableMemoryMB are the measured use of its revocable ones.
	RevocableCPU      float64 `json:"revocableCPU"`
	RevocableMemoryMB float64 `json:"revocableMemoryMB"`
	// MaxFraction bounds what the node lends: at most this share of its allocatable cpu
	// and memory (--revocable-max-fraction).
	MaxFraction float64 `json:"maxFraction"`
	// Margin is the share of the node's allocatable kept back from lending as a safety
	// margin above the measured use (--revocable-margin).
	Margin float64 `json:"margin"`
	// Evictions counts the revocable task groups the agent evicted since it started.
	Evictions int `json:"evictions,omitempty"`
}

// RevocableStale is how old a lending report may be: past it the node lends nothing,
// since what the owners use is no longer known.
const RevocableStale = time.Minute

// Lent is what one resource (cpu or memory) of a node lends to the revocable tier: the
// part of the non-revocable reservations (capped at the allocatable) their measured use
// leaves idle, less margin of the allocatable, at most maxFraction of it. The scheduler
// places by it, and the agent evicts when its revocable task groups no longer fit in it.
func Lent(alloc, reserved, used, margin, maxFraction float64) float64 {
	if alloc <= 0 {
		return 0
	}
	idle := min(reserved, alloc) - max(used, 0) - margin*alloc
	return max(0, min(idle, maxFraction*alloc))
}

// validateTier checks spec.tier.
func validateTier(tier, path string) FieldErrors {
	switch tier {
	case "", TierRevocable:
		return nil
	}
	return FieldErrors{{Field: path + ".tier", Message: fmt.Sprintf("%q is not a tier: leave it out or use %q", tier, TierRevocable)}}
}

// ValidateRevocableStatus checks an agent's lending report: an agent is input too.
func ValidateRevocableStatus(r *RevocableStatus) FieldErrors {
	var fe FieldErrors
	for _, f := range []struct {
		name string
		v    float64
	}{{"usedCPU", r.UsedCPU}, {"usedMemoryMB", r.UsedMemoryMB}, {"revocableCPU", r.RevocableCPU}, {"revocableMemoryMB", r.RevocableMemoryMB}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > 1e12 {
			fe = append(fe, FieldError{Field: f.name, Message: fmt.Sprintf("a number from 0 to 1e12, got %v", f.v)})
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"maxFraction", r.MaxFraction}, {"margin", r.Margin}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			fe = append(fe, FieldError{Field: f.name, Message: fmt.Sprintf("a fraction from 0 to 1, got %v", f.v)})
		}
	}
	if r.Evictions < 0 {
		fe = append(fe, FieldError{Field: "evictions", Message: "must be 0 or more"})
	}
	if r.Time.IsZero() {
		fe = append(fe, FieldError{Field: "time", Message: "required"})
	}
	return fe
}
