package agent

import (
	"path/filepath"

	v4 "github.com/berthhq/berth/api/v4"
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
