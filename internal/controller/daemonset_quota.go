package controller

import (
	"context"
	"errors"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// A daemonset counts one instance per node it runs on (its status's desired count,
// docs/policy.md "Counting"), so each node it grows to asks its namespace's quota for
// one more instance. A pass places an instance beyond the count the stored status
// already charges only when it fits the room left; the nodes that do not fit wait, are
// not counted, and are named in the status and a QuotaExceeded event with the
// namespace, the resource, the usage and the limit. They are placed in a later pass once
// room frees up. Restarts and nodes already counted replace what the quota charges
// already and never wait.

// dsQuota is a pass's room in its daemonset's namespace quota.
type dsQuota struct {
	gate    *quotaGate // nil: no resource quota
	per     quota.List // what one instance asks
	counted int        // the instances the stored status charges already
	held    []string   // nodes that wait for room
	why     error
}

// newDSQuota reads the namespace's quota and usage; an error leaves the pass placing
// nothing new (it is tried again), never more than the quota.
func (p *daemonPass) newDSQuota(ctx context.Context) (*dsQuota, error) {
	gate, err := p.c.quotaGate(ctx, p.key.Namespace)
	if err != nil {
		return nil, err
	}
	return &dsQuota{gate: gate, per: quota.PerInstance(&p.ds.Spec.Template.Spec), counted: max(p.ds.Status.Desired, 1)}, nil
}

// admit says whether node, which would be the pass's next counted instance, fits: within
// the stored count it does; past it, it takes one instance's room.
func (q *dsQuota) admit(node string, desired int) bool {
	if desired+1 <= q.counted {
		return true
	}
	if err := q.gate.take(q.per); err != nil {
		q.held, q.why = append(q.held, node), err
		return false
	}
	return true
}

// hold gives back a placement the pass does not create (the snapshot had reserved its
// room on the node).
func (p *daemonPass) hold(pl scheduler.Placement) {
	p.c.feed.With(func(s *scheduler.Snapshot) { s.RemoveTaskGroup(p.key.Namespace, pl.Name) })
}

// createAdmitted creates the instances the pass admitted. When the pass grows the
// daemonset past the nodes its stored status charges, it first writes that count
// (reserve): a user's write admitted on another server counts the daemonset by it, so
// the room is taken before the instances use it. A reservation that loses to another
// write of the namespace creates nothing: the pass counts again (quotaRecount).
func (p *daemonPass) createAdmitted(ctx context.Context, q *dsQuota, req *scheduler.Request, admitted []scheduler.Placement, desired int) error {
	if err := p.reserve(ctx, q, desired); err != nil {
		for _, pl := range admitted {
			p.hold(pl)
		}
		if errors.Is(err, store.ErrQuotaFence) {
			p.wake(quotaRecount)
			return nil
		}
		return err
	}
	for i, pl := range admitted {
		if err := p.create(ctx, req, pl); err != nil {
			for _, left := range admitted[i+1:] { // the failed one is given back by create
				p.hold(left)
			}
			return err
		}
	}
	return nil
}

// reserve writes desired as the stored daemonset's count of nodes, fenced by the count
// the pass's quota gate read, when it grows past the count the status charged.
func (p *daemonPass) reserve(ctx context.Context, q *dsQuota, desired int) error {
	if q.gate == nil || desired <= q.counted {
		return nil
	}
	obj, err := p.c.store.Get(ctx, v4.KindDaemonset, p.key.Namespace, p.key.Name)
	if err != nil {
		return fmt.Errorf("reserve the quota of daemonset %s: %w", p.key, err)
	}
	ds, ok := obj.(*v4.Daemonset)
	if !ok || ds.Status.Desired >= desired {
		return nil
	}
	ds.Status.Desired = desired
	if err := p.c.store.Update(q.gate.fenced(ctx), ds, store.Raw{}); err != nil {
		return fmt.Errorf("reserve the quota of daemonset %s for %d nodes: %w", p.key, desired, err)
	}
	return nil
}

// reportQuota notes the nodes that wait for room, if any.
func (p *daemonPass) reportQuota(q *dsQuota) {
	if len(q.held) == 0 {
		p.c.forget(p.key.String() + "/quota")
		return
	}
	msg := fmt.Sprintf("%d node(s) wait for room in the namespace's quota (%s): %v", len(q.held), joinNodes(q.held), q.why)
	p.note(msg)
	p.c.eventOnce(p.key.String()+"/quota", msg, p.key, v4.EventWarning, ReasonQuotaExceeded, msg)
	p.wake(unplacedRetry)
}

// joinNodes names up to five nodes, then how many more.
func joinNodes(nodes []string) string {
	const shown = 5
	if len(nodes) <= shown {
		return fmt.Sprint(nodes)
	}
	return fmt.Sprintf("%v and %d more", nodes[:shown], len(nodes)-shown)
}
