package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// pending says why instances wait for a node: the reason, which instances, since when,
// and the scheduler's words.
func (d *describer) pending(p *v4.Pending) {
	if p == nil {
		return
	}
	which := fmt.Sprintf("%d instances", p.Instances)
	if p.Instances == 1 {
		which = "1 instance"
	}
	if len(p.Indexes) > 0 {
		idx := make([]string, len(p.Indexes))
		for i, n := range p.Indexes {
			idx[i] = strconv.Itoa(n)
		}
		more := ""
		if p.Instances > len(p.Indexes) {
			more = ", ..."
		}
		which += " (" + strings.Join(idx, ", ") + more + ")"
	}
	since := ""
	if !p.Since.IsZero() {
		since = fmt.Sprintf(" for %s", d.now.Sub(p.Since).Round(time.Second))
	}
	d.kv("Pending", "%s: %s%s", p.Reason, which, since)
	if p.Reason == v4.PendingWaitingForHost {
		left := max(p.Until.Sub(d.now), 0).Round(time.Second)
		d.kv("Held For", "node %s (hostRetainTime, %s left)", p.Node, left)
	}
	d.kv("Why", "%s", orNone(p.Message))
}

// backOff lists the instances waiting for their restart: why, when, and how the last run
// ended.
func (d *describer) backOff(waiting []v4.InstanceBackOff) {
	if len(waiting) == 0 {
		return
	}
	d.section("Waiting to Restart", func() {
		for _, b := range waiting {
			when := "now"
			if left := b.RestartAt.Sub(d.now); left > 0 {
				when = "in " + left.Round(time.Second).String()
			}
			d.line(fmt.Sprintf("%d  %s  %s: restart %d %s (at %s); last run: %s",
				b.Index, b.TaskGroup, b.Reason, b.Restart, when, b.RestartAt.Local().Format(time.TimeOnly), orNone(b.LastExit)))
		}
	})
}
