package agent

import (
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

const mb = 1 << 20

// A node of 8 cores and 16000 MB; the owner reserves 7 cores and 14000 MB.
func revNode(ownerMem uint64, rev ...revPod) *revState {
	s := &revState{alloc: v4.NodeResources{CPU: 8, MemoryMB: 16000}, margin: 0.1, maxFraction: 0.5,
		pods: []revPod{{key: "a/owner", reserved: v4.NodeResources{CPU: 7, MemoryMB: 14000}, use: podUse{cores: 1, memory: ownerMem}}}}
	s.pods = append(s.pods, rev...)
	return s
}

func revPodOf(key string, prio int, since time.Time, memMB float64) revPod {
	return revPod{key: key, revocable: true, priority: prio, since: since, reserved: v4.NodeResources{CPU: 0.5, MemoryMB: memMB}, use: podUse{memory: 10 * mb}}
}

func TestRevocableVictim(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	old, young, low := revPodOf("b/old", 0, t0, 3000), revPodOf("b/young", 0, t0.Add(time.Minute), 3000), revPodOf("b/low", -5, t0, 3000)
	for _, c := range []struct {
		name, want, why string
		s               *revState
	}{
		// The owner uses 2000 MB: the node lends 2000 free + 8000 (bounded) = 10000 MB.
		{"they fit", "", "", revNode(2000*mb, old, young, low)},
		// It uses 8000 MB: 14000-8000-1600 = 4400 lent, 6400 in all, 9000 reserved.
		{"the lowest priority goes first", "b/low", "the node lends 6400 MB", revNode(8000*mb, old, young, low)},
		// At 9000 MB: 3400 lent, 5400 in all, 6000 reserved.
		{"then the youngest", "b/young", "the node lends 5400 MB", revNode(9000*mb, old, young)},
		{"nothing revocable: nothing to evict", "", "", revNode(15000 * mb)},
		// A non-revocable task group placed since takes the free 2000 MB back (unmeasured
		// yet, it counts its reservation): 8000 lent, 9000 reserved.
		{"a non-revocable placement takes the free part", "b/low", "the node lends 8000 MB", func() *revState {
			s := revNode(2000*mb, old, young, low)
			s.pods = append(s.pods, revPod{key: "a/new", reserved: v4.NodeResources{CPU: 0.5, MemoryMB: 2000}, use: podUse{unmeasured: true}})
			return s
		}()},
		// Unmeasured, the owner counts its whole reservation: only the free 2000 MB are lent.
		{"an unmeasured owner lends nothing", "b/young", "the node lends 2000 MB", func() *revState {
			s := revNode(0, old, young)
			s.pods[0].use.unmeasured = true
			return s
		}()},
		// The tasks use more than 90% of the allocatable, whatever the reservations say.
		{"the node's memory runs short", "b/old", "above the safe 14400 MB", func() *revState {
			s := revNode(1000*mb, old)
			s.pods[1].use.memory = 14000 * mb
			return s
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := c.s.victim()
			if got != c.want || !strings.Contains(why, c.why) {
				t.Errorf("victim %q (%s), want %q (%s)", got, why, c.want, c.why)
			}
		})
	}
}

func TestRevocableReport(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := revNode(2000*mb, revPodOf("b/x", 0, now, 3000))
	rep := s.report(now, 2)
	if rep.UsedMemoryMB != 2000 || rep.UsedCPU != 1 || rep.RevocableMemoryMB != 10 || rep.Evictions != 2 || rep.MaxFraction != 0.5 {
		t.Fatalf("report %+v", rep)
	}
	if errs := v4.ValidateRevocableStatus(&rep); len(errs) > 0 {
		t.Fatalf("the agent's own report is invalid: %v", errs)
	}
	alloc := s.alloc
	for _, c := range []struct {
		name string
		next func(r v4.RevocableStatus) v4.RevocableStatus
		want bool
	}{
		{"unchanged", func(r v4.RevocableStatus) v4.RevocableStatus { return r }, false},
		{"a small move", func(r v4.RevocableStatus) v4.RevocableStatus { r.UsedMemoryMB += 100; return r }, false},
		{"a large move", func(r v4.RevocableStatus) v4.RevocableStatus { r.UsedMemoryMB += 1000; return r }, true},
		{"an eviction", func(r v4.RevocableStatus) v4.RevocableStatus { r.Evictions++; return r }, true},
		{"grown old", func(r v4.RevocableStatus) v4.RevocableStatus { r.Time = r.Time.Add(revocableResend); return r }, true},
	} {
		if got := changedReport(rep, c.next(rep), alloc); got != c.want {
			t.Errorf("%s: sent %v, want %v", c.name, got, c.want)
		}
	}
}

// Evictions are paced: one per interval however many revocable task groups are over.
func TestRevocableEvictionPace(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var evicted []string
	e := &revEvictor{every: 30 * time.Second, evict: func(ns, name, why string) bool {
		evicted = append(evicted, ns+"/"+name)
		return true
	}}
	s := revNode(15000*mb, revPodOf("b/one", 0, t0, 3000), revPodOf("b/two", 0, t0.Add(time.Second), 3000))
	for _, after := range []time.Duration{0, time.Second, 29 * time.Second} {
		e.step(s, t0.Add(after))
	}
	if len(evicted) != 1 || evicted[0] != "b/two" || e.count != 1 {
		t.Fatalf("evicted %v (count %d) within one interval, want [b/two]", evicted, e.count)
	}
	s.pods = s.pods[:2] // b/two is gone; b/one is still over
	e.step(s, t0.Add(30*time.Second))
	if len(evicted) != 2 || evicted[1] != "b/one" {
		t.Fatalf("evicted %v after the interval", evicted)
	}
	// An eviction the executor refuses (the pod is not running) is no eviction: the next
	// step tries again at once.
	e.evict = func(ns, name, why string) bool { return false }
	e.step(s, t0.Add(60*time.Second))
	if e.count != 2 || !e.last.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("a refused eviction counted: %d, last %v", e.count, e.last)
	}
}
