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
		BindAddr: a.cfg.LBBind, HTTPPort: a.cfg.LBHTTPPort, Logger: a.log, Warn: a.warnNode, WarnService: a.warnService})
}

// describeLBGroup adds the node's load-balancer group and its HTTP port to the node's
// attributes: the server refuses a service of the group on a port the node already uses
// (the agent's, the HTTP port, the port ranges), rather than the node finding it taken.
func (a *Agent) describeLBGroup(n *v4.Node) {
	if a.cfg.LBGroup == "" {
		return
	}
	port := a.cfg.LBHTTPPort
	if port == 0 {
		port = 80 // lbgroup.New's default
	}
	at := &n.Spec.Attributes
	if at.Text == nil {
		at.Text = map[string]string{}
	}
	if at.Scalar == nil {
		at.Scalar = map[string]float64{}
	}
	at.Text[v4.LBGroupAttribute] = a.cfg.LBGroup
	at.Scalar[v4.LBHTTPPortAttribute] = float64(port)
}

// nodeEventQueue bounds the node events waiting for a server: they are rare (a group
// reports a refused configuration once), so a full queue means servers out of reach,
// and the log keeps what is dropped.
const nodeEventQueue = 16

// warnNode queues a Warning event of this node for sendNodeEvents, without waiting: the
// load-balancer group calls it from its update loop, which must not stall on a server.
func (a *Agent) warnNode(reason, message string) {
	a.queueEvent(v4.AgentEvent{Type: v4.EventWarning, Reason: reason, Message: message})
}

// warnService queues a Warning event of a service of the node's load-balancer group (a
// port of it the node cannot listen on): its owner, who may not see the node's events,
// sees it on the service.
func (a *Agent) warnService(namespace, name, reason, message string) {
	a.queueEvent(v4.AgentEvent{Type: v4.EventWarning, Reason: reason, Message: message,
		Kind: v4.KindService, Namespace: namespace, Name: name})
}

func (a *Agent) queueEvent(ev v4.AgentEvent) {
	if len(ev.Message) > v4.MaxAgentEventMessage {
		ev.Message = ev.Message[:v4.MaxAgentEventMessage-3] + "..."
	}
	select {
	case a.nodeEvents <- ev:
	default:
		a.log.Warn("node event dropped: too many wait for a server", "reason", ev.Reason, "service", ev.Namespace+"/"+ev.Name)
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
