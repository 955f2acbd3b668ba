package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// rev builds a revision with desired instances of which the first avail are available.
func rev(desired, avail int) revision {
	r := revision{desired: desired, available: make([]bool, desired)}
	for i := range min(avail, desired) {
		r.available[i] = true
	}
	return r
}

func TestPlanStep(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ru := func(order string, unavail, surge int) v4.RollingUpdate {
		return v4.RollingUpdate{MaxUnavailable: unavail, MaxSurge: surge, RollingOrder: order, StepDeadline: 60}
	}
	create, del := v4.RollingCreateFirst, v4.RollingDeleteFirst
	cases := []struct {
		name    string
		in      stepInput
		current int
		old     []int
		stepped bool
		pause   bool
		blocked string // substring; "" when not blocked
		expired bool
		wait    time.Duration
	}{
		{name: "first create takes every instance",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(0, 0)},
			current: 6, old: []int{}, stepped: true},
		{name: "scale without old revisions",
			in:      stepInput{instances: 4, ru: ru(create, 1, 1), current: rev(6, 6)},
			current: 4, old: []int{}, stepped: true},
		{name: "scale to zero without old revisions",
			in:      stepInput{instances: 0, ru: ru(create, 1, 1), current: rev(3, 3)},
			current: 0, old: []int{}, stepped: true},
		{name: "a template at zero over a running revision (create first) stops it at once",
			in:      stepInput{instances: 0, ru: ru(create, 0, 0), current: rev(0, 0), old: []revision{rev(3, 3)}},
			current: 0, old: []int{0}, stepped: true},
		{name: "a template at zero over a running revision (delete first) stops it at once",
			in:      stepInput{instances: 0, ru: ru(del, 0, 0), current: rev(0, 0), old: []revision{rev(3, 3), rev(1, 0)}},
			current: 0, old: []int{0, 0}, stepped: true},
		{name: "zero over zero is nothing to do",
			in:      stepInput{instances: 0, ru: ru(create, 1, 1), current: rev(0, 0), old: []revision{rev(0, 0)}},
			current: 0, old: []int{0}},
		{name: "create first starts with the surge",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(0, 0), old: []revision{rev(6, 6)}},
			current: 1, old: []int{6}, stepped: true},
		{name: "create first waits for the new instance",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(1, 0), old: []revision{rev(6, 6)}, lastStep: now.Add(-10 * time.Second)},
			current: 1, old: []int{6}, blocked: "waiting for 1 of 1 new instances", wait: 50 * time.Second},
		{name: "create first ends the step by stopping old ones down to the availability floor",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(1, 1), old: []revision{rev(6, 6)}},
			current: 1, old: []int{4}, stepped: true},
		{name: "create first next step surges again",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(1, 1), old: []revision{rev(4, 4)}},
			current: 3, old: []int{4}, stepped: true},
		{name: "rollingManually pauses at the end of a step",
			in:      stepInput{instances: 6, ru: v4.RollingUpdate{MaxUnavailable: 1, MaxSurge: 1, RollingOrder: create, RollingManually: true}, current: rev(3, 3), old: []revision{rev(4, 4)}},
			current: 3, old: []int{2}, stepped: true, pause: true},
		{name: "upgradeDuration spaces the steps",
			in:      stepInput{instances: 6, ru: v4.RollingUpdate{MaxUnavailable: 1, MaxSurge: 1, RollingOrder: create, UpgradeDuration: 30}, current: rev(1, 1), old: []revision{rev(4, 4)}, lastStep: now.Add(-10 * time.Second)},
			current: 1, old: []int{4}, wait: 20 * time.Second},
		{name: "delete first stops old ones and surges in one step",
			in:      stepInput{instances: 6, ru: ru(del, 1, 1), current: rev(0, 0), old: []revision{rev(6, 6)}},
			current: 2, old: []int{5}, stepped: true},
		{name: "delete first waits for the new instances",
			in:      stepInput{instances: 6, ru: ru(del, 1, 1), current: rev(2, 1), old: []revision{rev(5, 5)}, lastStep: now},
			current: 2, old: []int{5}, blocked: "waiting for 1 of 2", wait: 60 * time.Second},
		{name: "delete first next step",
			in:      stepInput{instances: 6, ru: ru(del, 1, 1), current: rev(2, 2), old: []revision{rev(5, 5)}},
			current: 4, old: []int{3}, stepped: true},
		{name: "delete first with rollingManually pauses after each step",
			in:      stepInput{instances: 6, ru: v4.RollingUpdate{MaxUnavailable: 2, MaxSurge: 1, RollingOrder: del, RollingManually: true}, current: rev(0, 0), old: []revision{rev(6, 6)}},
			current: 3, old: []int{4}, stepped: true, pause: true},
		{name: "a larger maxUnavailable stops more at once",
			in:      stepInput{instances: 6, ru: ru(create, 3, 2), current: rev(2, 2), old: []revision{rev(6, 6)}},
			current: 2, old: []int{1}, stepped: true},
		{name: "unavailable old instances stop for free",
			in:      stepInput{instances: 4, ru: ru(create, 1, 1), current: rev(1, 1), old: []revision{{desired: 4, available: []bool{true, true, false, false}}}},
			current: 1, old: []int{2}, stepped: true},
		{name: "an available top index blocks when at the floor",
			in:      stepInput{instances: 4, ru: ru(create, 1, 1), current: rev(1, 1), old: []revision{{desired: 4, available: []bool{false, false, true, true}}}, lastStep: now.Add(-time.Minute)},
			current: 1, old: []int{4}, blocked: "fewer than 3 available", expired: true},
		{name: "the oldest revision goes first",
			in:      stepInput{instances: 4, ru: ru(create, 2, 1), current: rev(1, 1), old: []revision{rev(1, 1), rev(3, 3)}},
			current: 1, old: []int{0, 1}, stepped: true},
		{name: "the deadline suspends a step waiting too long",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(1, 0), old: []revision{rev(6, 6)}, lastStep: now.Add(-61 * time.Second)},
			current: 1, old: []int{6}, blocked: "deadline", expired: true},
		{name: "the last old instance leaves, then the current revision fills up",
			in:      stepInput{instances: 6, ru: ru(create, 1, 1), current: rev(5, 5), old: []revision{rev(0, 0)}},
			current: 6, old: []int{0}, stepped: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.now = now
			if tc.in.lastStep.IsZero() {
				tc.in.lastStep = now.Add(-time.Hour)
			}
			p := planStep(tc.in)
			if p.current != tc.current || !slices.Equal(p.old, tc.old) {
				t.Errorf("counts: current %d old %v, want %d %v", p.current, p.old, tc.current, tc.old)
			}
			if p.stepped != tc.stepped || p.pause != tc.pause || p.expired != tc.expired {
				t.Errorf("stepped %v pause %v expired %v, want %v %v %v", p.stepped, p.pause, p.expired, tc.stepped, tc.pause, tc.expired)
			}
			if tc.blocked == "" && p.blocked != "" || !strings.Contains(p.blocked, tc.blocked) {
				t.Errorf("blocked %q, want %q", p.blocked, tc.blocked)
			}
			if p.wait != tc.wait {
				t.Errorf("wait %v, want %v", p.wait, tc.wait)
			}
		})
	}
}

// Walking a whole rollout with every new instance available at once never wants more
// than instances+maxSurge nor leaves fewer than instances-maxUnavailable available, and
// ends with the current revision only.
func TestPlanStepWholeRolloutKeepsTheBounds(t *testing.T) {
	for _, order := range []string{v4.RollingCreateFirst, v4.RollingDeleteFirst} {
		for _, b := range []struct{ n, unavail, surge int }{{6, 1, 1}, {6, 2, 3}, {3, 1, 1}, {10, 4, 1}, {1, 1, 1}} {
			ru := v4.RollingUpdate{MaxUnavailable: b.unavail, MaxSurge: b.surge, RollingOrder: order}
			cur, old := 0, b.n
			for steps := 0; old > 0 || cur < b.n; steps++ {
				if steps > 100 {
					t.Fatalf("%s %+v: no progress (current %d, old %d)", order, b, cur, old)
				}
				in := stepInput{instances: b.n, ru: ru, current: rev(cur, cur), now: time.Now()}
				if old > 0 {
					in.old = []revision{rev(old, old)}
				}
				p := planStep(in)
				newOld := 0
				if len(p.old) > 0 {
					newOld = p.old[0]
				}
				if p.current+newOld > b.n+b.surge {
					t.Fatalf("%s %+v: %d+%d wanted, more than %d", order, b, p.current, newOld, b.n+b.surge)
				}
				if avail := cur + newOld; avail < b.n-b.unavail { // the new ones are not available yet
					t.Fatalf("%s %+v: only %d available", order, b, avail)
				}
				cur, old = p.current, newOld
			}
		}
	}
}

// A Recreate deployment rolls in one step: every old instance stops and every new one
// starts together, whatever its rolling update says.
func TestRecreateIsOneStep(t *testing.T) {
	d := &v4.Deployment{Spec: v4.DeploymentSpec{Instance: 6, Strategy: v4.DeploymentStrategy{Type: v4.StrategyRecreate,
		RollingUpdate: &v4.RollingUpdate{MaxUnavailable: 1, MaxSurge: 1, RollingOrder: v4.RollingCreateFirst}}}}
	r := &rollout{d: d}
	p := planStep(stepInput{instances: 6, ru: r.ru(), current: rev(0, 0), old: []revision{rev(6, 6)}, now: time.Now()})
	if p.current != 6 || !slices.Equal(p.old, []int{0}) || !p.stepped || p.blocked != "" {
		t.Errorf("plan %+v, want every old instance stopped and 6 new ones in one step", p)
	}
	d.Spec.Strategy.Type = v4.StrategyRollingUpdate
	if p := planStep(stepInput{instances: 6, ru: r.ru(), current: rev(0, 0), old: []revision{rev(6, 6)}, now: time.Now()}); p.current != 1 {
		t.Errorf("a rolling update's first step: %+v, want one new instance", p)
	}
}
