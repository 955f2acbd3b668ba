package agent

import (
	"context"
	"path/filepath"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/netsvc/lbgroup"
)

// lbDir is where the load-balancer group's HAProxy keeps its files, under the data
// directory.
const lbDir = "lbgroup"

// newLBGroup prepares the node's load-balancer group when the config names one (nil
// otherwise), or soft-stops the HAProxy an earlier run with a group left.
func (a *Agent) newLBGroup() (*lbgroup.Group, error) {
	dir := filepath.Join(a.cfg.DataDir, lbDir)
	if a.cfg.LBGroup == "" {
		if err := lbgroup.Stop(dir, a.cfg.HAProxy); err != nil {
			a.log.Warn("could not stop the HAProxy of an earlier load-balancer group", "err", err)
		}
		return nil, nil
	}
	a.nodeEvents = make(chan v4.AgentEvent, nodeEventQueue)
	return lbgroup.New(a.catalog, lbgroup.Config{Group: a.cfg.LBGroup, Dir: dir, HAProxy: a.cfg.HAProxy,
		BindAddr: a.cfg.LBBind, HTTPPort: a.cfg.LBHTTPPort, Logger: a.log, Warn: a.warnNode})
}

// nodeEventQueue bounds the node events waiting for a server: they are rare (a group
// reports a refused configuration once), so a full queue means servers out of reach,
// and the log keeps what is dropped.
const nodeEventQueue = 16

// warnNode queues a Warning event of this node for sendNodeEvents, without waiting: the
// load-balancer group calls it from its update loop, which must not stall on a server.
func (a *Agent) warnNode(reason, message string) {
	if len(message) > v4.MaxAgentEventMessage {
		message = message[:v4.MaxAgentEventMessage-3] + "..."
	}
	select {
	case a.nodeEvents <- v4.AgentEvent{Type: v4.EventWarning, Reason: reason, Message: message}:
	default:
		a.log.Warn("node event dropped: too many wait for a server", "reason", reason)
	}
}

// sendNodeEvents records the queued node events on a server (best effort: the log has
// them too) until ctx ends.
func (a *Agent) sendNodeEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-a.nodeEvents:
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := a.servers.do(sctx, func(c *client.Client) error { return c.AgentEvent(sctx, a.cfg.NodeName, ev) })
			cancel()
			if err != nil {
				a.log.Warn("could not record an event of the node", "reason", ev.Reason, "err", err)
			}
		}
	}
}
