package v4

import (
	"math"
	"strings"
	"testing"
	"time"
)

// spec.tier is the one tier or nothing, on every kind that has it.
func TestTierValidation(t *testing.T) {
	proc := func(tier string) string {
		return `{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"tier":"` + tier +
			`","template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}`
	}
	cron := `{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"c"},"spec":{"schedule":"@hourly","jobTemplate":{"spec":{"tier":"free",` +
		`"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}}}`
	for doc, field := range map[string]string{proc("Revocable"): "spec.tier", proc("best-effort"): "spec.tier", cron: "spec.jobTemplate.spec.tier"} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", doc, err, field)
		}
	}
	for _, tier := range []string{"", TierRevocable} {
		o, err := Parse([]byte(proc(tier)))
		if err != nil {
			t.Fatalf("tier %q refused: %v", tier, err)
		}
		if got := o[0].Object.(*Process).Spec.Scheduling.Revocable(); got != (tier != "") {
			t.Errorf("tier %q: revocable %v", tier, got)
		}
	}
}

// An agent's report is input: every number bounded, fractions within 0..1.
func TestValidateRevocableStatus(t *testing.T) {
	ok := RevocableStatus{Time: time.Now(), UsedCPU: 1, UsedMemoryMB: 100, MaxFraction: 0.25, Margin: 0.1}
	if errs := ValidateRevocableStatus(&ok); len(errs) > 0 {
		t.Fatalf("valid report refused: %v", errs)
	}
	for field, change := range map[string]func(*RevocableStatus){
		"usedCPU":           func(r *RevocableStatus) { r.UsedCPU = math.NaN() },
		"usedMemoryMB":      func(r *RevocableStatus) { r.UsedMemoryMB = -1 },
		"revocableCPU":      func(r *RevocableStatus) { r.RevocableCPU = math.Inf(1) },
		"revocableMemoryMB": func(r *RevocableStatus) { r.RevocableMemoryMB = 1e13 },
		"maxFraction":       func(r *RevocableStatus) { r.MaxFraction = 1.5 },
		"margin":            func(r *RevocableStatus) { r.Margin = math.NaN() },
		"evictions":         func(r *RevocableStatus) { r.Evictions = -1 },
		"time":              func(r *RevocableStatus) { r.Time = time.Time{} },
	} {
		r := ok
		change(&r)
		if errs := ValidateRevocableStatus(&r); len(errs) != 1 || errs[0].Field != field {
			t.Errorf("%s: %v", field, errs)
		}
	}
}

func TestLent(t *testing.T) {
	for _, c := range []struct{ alloc, reserved, used, margin, frac, want float64 }{
		{100, 80, 10, 0.1, 1, 60},    // idle 70 less 10
		{100, 80, 10, 0.1, 0.25, 25}, // bounded
		{100, 150, 10, 0, 1, 90},     // reservations capped at the allocatable
		{100, 80, 90, 0, 1, 0},       // used above reserved
		{0, 80, 0, 0, 1, 0},          // nothing allocatable
		{100, 80, -5, 0, 1, 80},      // a negative use counts as none
	} {
		if got := Lent(c.alloc, c.reserved, c.used, c.margin, c.frac); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Lent%v = %v, want %v", c, got, c.want)
		}
	}
}
