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
	return lbgroup.New(a.catalog, lbgroup.Config{Group: a.cfg.LBGroup, Dir: dir, HAProxy: a.cfg.HAProxy,
		BindAddr: a.cfg.LBBind, HTTPPort: a.cfg.LBHTTPPort, Logger: a.log, Warn: a.warnNode})
}

// warnNode records a Warning event of this node on a server (best effort: the log has
// it too).
func (a *Agent) warnNode(reason, message string) {
	ctx, cancel := context.WithTimeout(a.runCtx, 10*time.Second)
	defer cancel()
	ev := v4.AgentEvent{Type: v4.EventWarning, Reason: reason, Message: message}
	if len(ev.Message) > 4000 {
		ev.Message = ev.Message[:4000] + "..."
	}
	err := a.servers.do(ctx, func(c *client.Client) error { return c.AgentEvent(ctx, a.cfg.NodeName, ev) })
	if err != nil {
		a.log.Warn("could not record an event of the node", "reason", reason, "err", err)
	}
}
