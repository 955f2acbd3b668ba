package agent

import (
	"context"
	"time"
	"unicode/utf8"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// nodeEventQueue bounds the events waiting for a server: they are rare (a load-balancer
// group reports a refused configuration once, a pod's hook fails once per run), so a
// full queue means servers out of reach, and the log keeps what is dropped.
const nodeEventQueue = 64

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

// taskGroupEvent is the executor's Config.Event: an event of a pod the node runs (a
// lifecycle hook that failed), which the server records on the pod's owner. The pod's
// goroutine calls it, so it only queues.
func (a *Agent) taskGroupEvent(namespace, name, typ, reason, message string) {
	a.queueEvent(v4.AgentEvent{Type: typ, Reason: reason, Message: message,
		Kind: v4.KindTaskGroup, Namespace: namespace, Name: name})
}

// queueEvent queues ev for sendNodeEvents, or drops it with a log line when the queue is
// full: its callers (a pod's goroutine, the load-balancer group's loop) never wait for a
// server. A message too long for the server is cut, on a rune boundary so that its JSON
// stays within the bound.
func (a *Agent) queueEvent(ev v4.AgentEvent) {
	if len(ev.Message) > v4.MaxAgentEventMessage {
		cut := v4.MaxAgentEventMessage - len("...")
		for cut > 0 && !utf8.RuneStart(ev.Message[cut]) {
			cut--
		}
		ev.Message = ev.Message[:cut] + "..."
	}
	select {
	case a.nodeEvents <- ev:
	default:
		a.log.Warn("event dropped: too many wait for a server", "reason", ev.Reason, "kind", ev.Kind,
			"namespace", ev.Namespace, "name", ev.Name, "message", ev.Message)
	}
}

// sendNodeEvents records the queued events on a server (best effort: the log has them
// too) until ctx ends.
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
				a.log.Warn("could not record an event", "reason", ev.Reason, "kind", ev.Kind,
					"namespace", ev.Namespace, "name", ev.Name, "err", err)
			}
		}
	}
}
