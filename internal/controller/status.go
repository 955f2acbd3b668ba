package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// updateStatus writes the application's status when it changed, retrying on conflicts
// with users' writes.
func (c *AppController) updateStatus(ctx context.Context, key scheduler.AppKey, st v4.WorkloadStatus) error {
	return writeStored(ctx, c.store, key, func(obj v4.Object) error {
		w := workload(obj)
		st.KeepLastPhase(w.Status)
		if w.Status.Equal(st) {
			return nil
		}
		if w.Status.Phase != st.Phase {
			c.event(key, v4.EventNormal, "Status", fmt.Sprintf("%s %s/%s is %s (%d/%d running)", key.Kind, key.Namespace, key.Name, st.Phase, st.Running, st.Instances))
		}
		st.Updated = time.Now().UTC()
		w.Status = st
		err := c.store.Update(ctx, obj, store.Raw{})
		if err == nil {
			c.opts.Metrics.statusWritten("application")
			if v := c.apps[key.Kind]; v != nil {
				v.wrote(w.Metadata.ResourceVersion) // the next reconcile reads this status
			}
		}
		return err
	})
}

// retryStatusWrite runs write, which reads an object anew and writes its status, until
// it ends in anything but a write conflict (another writer got in between), 5 times at
// most; what names the object in the error when none got through.
func retryStatusWrite(what string, write func() error) error {
	for range 5 {
		if err := write(); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("update status of %s: too many concurrent writes", what)
}

// writeStored is retryStatusWrite over key's stored object, read afresh (as a P) for
// each try of write; an object gone is no error: there is no status to write.
func writeStored[P v4.Object](ctx context.Context, st *store.Store, key scheduler.AppKey, write func(P) error) error {
	return retryStatusWrite(key.String(), func() error {
		obj, err := st.Get(ctx, key.Kind, key.Namespace, key.Name)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		p, ok := obj.(P)
		if !ok {
			return fmt.Errorf("%s is stored as a %s", key, obj.GetKind())
		}
		return write(p)
	})
}

// observe records an event when a task group's phase changed since last seen.
func (c *base) observe(tg *v4.TaskGroup, phase string) {
	key := phaseKey(tg)
	prev, seen := c.lookup(key)
	c.swap(key, phase)
	if seen && prev == phase || !seen && phase == v4.StatusStaging {
		return
	}
	if !seen && tg.Status.Updated.Before(c.started) {
		return // reported by the leader of the term in which it happened (no duplicate callbacks)
	}
	typ := v4.EventNormal
	msg := fmt.Sprintf("instance %d (%s) on %s is %s", tg.Spec.Index, tg.Metadata.Name, tg.Spec.Node, phase)
	if phase == v4.StatusFailed || phase == v4.StatusLost || phase == v4.StatusError {
		typ = v4.EventWarning
	}
	if tg.Status.Message != "" {
		msg += ": " + tg.Status.Message
	}
	// The server records the task group's own event when its agent reports; this one is
	// the application's view.
	c.record(v4.Event{Type: typ, Reason: "Instance" + phase, Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name,
		TaskGroup: tg.Metadata.Name, Node: tg.Spec.Node, Message: msg})
}

// event records an event about the application.
func (c *base) event(key scheduler.AppKey, typ, reason, msg string) {
	c.record(v4.Event{Type: typ, Reason: reason, Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Message: msg})
}

// eventOnce records an event unless the same dedup value was recorded for id already.
func (c *base) eventOnce(id, dedup string, key scheduler.AppKey, typ, reason, msg string) {
	c.recordOnce(id, dedup, v4.Event{Type: typ, Reason: reason, Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Message: msg})
}

func phaseKey(tg *v4.TaskGroup) string {
	return "phase/" + tg.Metadata.Namespace + "/" + tg.Metadata.Name
}
