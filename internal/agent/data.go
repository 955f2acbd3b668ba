package agent

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// dataSource gives the executor the configmaps and secrets its pods inject, read over
// the agent routes of the server (executor.DataSource).
type dataSource struct{ a *Agent }

func (d dataSource) ConfigMap(ctx context.Context, ns, name string) (*v4.ConfigMap, error) {
	var cm *v4.ConfigMap
	err := d.a.servers.do(ctx, func(c *client.Client) error {
		var err error
		cm, err = c.AgentConfigMap(ctx, ns, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, err)
	}
	return cm, nil
}

// Secret asks for the secret on behalf of taskGroup, the task group of this node being
// started that injects it: the server gives a secret only to the node of a task group
// that uses it (docs/security.md, Node identity). Another task group of the node that
// uses it may be one the server has just deleted (the old run of a move, whose deletion
// the agent has not heard of yet), and the server rightly refuses on its behalf.
func (d dataSource) Secret(ctx context.Context, ns, name, taskGroup string) (*v4.Secret, error) {
	var s *v4.Secret
	err := d.a.servers.do(ctx, func(c *client.Client) error {
		var err error
		s, err = c.AgentSecret(ctx, ns, name, d.a.cfg.NodeName, taskGroup)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}
