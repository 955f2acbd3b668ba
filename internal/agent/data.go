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

// Secret asks for the secret on behalf of a task group of this node that uses it: the
// server gives a secret only to the node of such a task group (docs/security.md, Node
// identity).
func (d dataSource) Secret(ctx context.Context, ns, name string) (*v4.Secret, error) {
	user := d.a.secretUser(ns, name)
	var s *v4.Secret
	err := d.a.servers.do(ctx, func(c *client.Client) error {
		var err error
		s, err = c.AgentSecret(ctx, ns, name, d.a.cfg.NodeName, user)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}

// secretUser returns the name of a task group of namespace ns the agent was given that
// refers to secret name, or "" (the server then looks for any).
func (a *Agent) secretUser(ns, name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tg := range a.desired {
		if tg.Metadata.Namespace != ns {
			continue
		}
		if tg.Spec.Template.Spec.Names(v4.KindSecret, name) {
			return tg.Metadata.Name
		}
	}
	return ""
}
