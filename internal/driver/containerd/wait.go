package containerd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/typeurl/v2"

	"github.com/berthhq/berth/internal/driver"
)

// eventsRetryMax bounds the pause before the event stream is opened again after it broke.
const eventsRetryMax = 10 * time.Second

// Wait delivers the task's state once it has ended. One subscription to containerd's
// task exit and delete events of the namespace serves every waiter (not one Wait call
// per task); when it breaks, every waited task is inspected again once it is back, so
// an end during the gap is not missed.
func (d *Driver) Wait(ctx context.Context, id string) (<-chan driver.State, error) {
	if err := d.checkID(id); err != nil {
		return nil, err
	}
	d.startEvents()
	return d.waiters.WaitFor(ctx, id, d.Inspect)
}

// startEvents starts the event stream's goroutine once; Close stops it.
func (d *Driver) startEvents() {
	d.eventsOnce.Do(func() {
		d.eventsWG.Go(func() { d.followEvents(d.eventsCtx) })
	})
}

// followEvents reads task exit and delete events until ctx ends, reconnecting with a
// growing pause while containerd is away.
func (d *Driver) followEvents(ctx context.Context) {
	filters := []string{
		fmt.Sprintf(`namespace==%s,topic=="/tasks/exit"`, d.ns),
		fmt.Sprintf(`namespace==%s,topic=="/tasks/delete"`, d.ns),
		fmt.Sprintf(`namespace==%s,topic=="/containers/delete"`, d.ns),
	}
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		msgs, errs := d.cli.Subscribe(sctx, filters...)
		d.recheckWaiting(ctx)
		err := d.readEvents(ctx, msgs, errs)
		cancel()
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("containerd event stream broke; waiting tasks are checked again when it is back", "err", err, "retry", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, eventsRetryMax)
	}
}

// readEvents hands each event's task to its waiters until the stream fails.
func (d *Driver) readEvents(ctx context.Context, msgs <-chan *events.Envelope, errs <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			if err == nil {
				err = errors.New("stream ended")
			}
			return err
		case m := <-msgs:
			if m == nil || m.Event == nil {
				continue
			}
			if id, ok := d.taskOfEvent(m); ok && d.waiters.Has(id) {
				d.notifyIfEnded(ctx, id)
			}
		}
	}
}

// taskOfEvent is the task ID of the container an event is about, when it is the
// owner's (its name has the owner's prefix).
func (d *Driver) taskOfEvent(m *events.Envelope) (string, bool) {
	v, err := typeurl.UnmarshalAny(m.Event)
	if err != nil {
		return "", false
	}
	var name string
	switch e := v.(type) {
	case *apievents.TaskExit:
		name = e.ContainerID
	case *apievents.TaskDelete:
		name = e.ContainerID
	case *apievents.ContainerDelete:
		name = e.ID
	default:
		return "", false
	}
	return strings.CutPrefix(name, d.prefix)
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
	d.log.Warn("inspect a task after its event", "task", id, "err", err)
}
