package docker

import (
	"context"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
)

// eventsRetryMax bounds the pause before the event stream is opened again after it broke
// (the daemon restarted or is down).
const eventsRetryMax = 10 * time.Second

// Wait delivers the task's state once its container has stopped. One stream of Docker's
// container "die" events serves every waiter of the driver (one connection to the daemon,
// not one ContainerWait or inspect per container); when the stream breaks, every waited
// task is inspected again once it is back, so an end during the gap is not missed.
func (d *Driver) Wait(ctx context.Context, id string) (<-chan driver.State, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	d.startEvents()
	return d.waiters.WaitFor(ctx, id, d.Inspect)
}

// startEvents starts the event stream's goroutine once; Close stops it.
func (d *Driver) startEvents() {
	d.eventsOnce.Do(func() {
		d.eventsWG.Add(1)
		go func() {
			defer d.eventsWG.Done()
			d.followEvents(d.eventsCtx)
		}()
	})
}

// followEvents reads container "die" events of berth's task containers until ctx ends,
// reconnecting with a growing pause while the daemon is away.
func (d *Driver) followEvents(ctx context.Context) {
	opts := client.EventsListOptions{Filters: make(client.Filters).
		Add("type", string(events.ContainerEventType)).
		Add("event", string(events.ActionDie)).
		Add("label", LabelID),
	}
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		stream := d.cli.Events(ctx, opts)
		// The stream is open (or failed): ends while it was not are found by looking.
		d.recheckWaiting(ctx)
		err := d.readEvents(ctx, stream.Messages, stream.Err)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("docker event stream broke; waiting tasks are checked again when it is back", "err", err, "retry", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, eventsRetryMax)
	}
}

// readEvents hands each die event to the container's waiters until the stream fails.
func (d *Driver) readEvents(ctx context.Context, msgs <-chan events.Message, errs <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return err
		case m := <-msgs:
			// Containers nobody waits for (being removed, another agent's in tests) are
			// not inspected, nor another cluster's or node's container of a task of the
			// same ID (an event's attributes are the container's labels).
			if id := m.Actor.Attributes[LabelID]; id != "" && d.owner.Owns(m.Actor.Attributes) && d.waiters.Has(id) {
				d.notifyIfEnded(ctx, id)
			}
		}
	}
}

// recheckWaiting inspects every waited task and notifies the waiters of those that ended.
func (d *Driver) recheckWaiting(ctx context.Context) {
	d.waiters.RecheckAll(ctx, d.Inspect, d.warnInspect)
}

// notifyIfEnded inspects one task and, when it no longer runs or is gone, hands its
// state to its waiters.
func (d *Driver) notifyIfEnded(ctx context.Context, id string) {
	if err := d.waiters.NotifyIfEnded(ctx, id, d.Inspect); err != nil {
		d.warnInspect(id, err)
	}
}

func (d *Driver) warnInspect(id string, err error) {
	d.log.Warn("inspect a container after its die event", "task", id, "err", err)
}
