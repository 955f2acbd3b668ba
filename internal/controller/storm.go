package controller

import (
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// A restart storm (Lain deployd's "restart too many times"): an instance restarted more
// than stormRestarts times within stormWindow. berth keeps applying the restart policy
// (BCS semantics) and reports the storm once, when the count crosses the limit; it is
// reported again only after the instance calmed down below it.
const (
	stormRestarts = 3
	stormWindow   = 30 * time.Minute
)

// recentRestarts returns the restart times of the ended run tg that fall within the
// window before now, plus now: the history its replacement carries. The history lives in
// the task group, so a leader change neither loses it nor reports a storm twice, and
// ReschedTimes starting over (BCS's 30-minute reset) does not hide a storm.
func recentRestarts(tg *v4.TaskGroup, now time.Time) []time.Time {
	out := make([]time.Time, 0, len(tg.Spec.RecentRestarts)+1)
	for _, t := range tg.Spec.RecentRestarts {
		if now.Sub(t) < stormWindow && !t.After(now) {
			out = append(out, t)
		}
	}
	if len(out) > stormRestarts+1 { // bounded: a storm under way stays above the limit
		out = out[len(out)-stormRestarts-1:]
	}
	return append(out, now.UTC())
}

// stormStarts reports whether the restart recorded last in history makes the instance
// cross the storm limit: the window held exactly the limit before it. A storm under way
// (more than the limit before) was reported when it began.
func stormStarts(history []time.Time) bool { return len(history) == stormRestarts+1 }

// stormEvent is the RestartStorm warning about an instance's ended run tg.
func stormEvent(key scheduler.AppKey, tg *v4.TaskGroup, history []time.Time) v4.Event {
	span := history[len(history)-1].Sub(history[0]).Round(time.Second)
	return v4.Event{Type: v4.EventWarning, Reason: "RestartStorm", Kind: key.Kind,
		Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name, TaskGroup: tg.Metadata.Name, Node: tg.Spec.Node,
		Message: fmt.Sprintf("%s instance %d restarted %d times in %s (more than %d in %s): it keeps failing (%s)",
			key, tg.Spec.Index, len(history), span, stormRestarts, stormWindow, tg.Status.Phase)}
}
