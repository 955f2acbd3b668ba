package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/csivolume"
)

// CSI volumes (docs/volumes.md, "On the node"): the pods' csi volumes are claimed
// through the server and staged and published by the node's CSI plugins for the
// executor. The publications and stagings are recorded under <data-dir>/csi/state, so
// that those of pods that went while the agent was down, or whose teardown failed, are
// undone by runCSIVolumes, retried with backoff and reported until they are.

// newCSIVolumes makes the manager of the pods' csi volumes.
func (a *Agent) newCSIVolumes() (*csivolume.Manager, error) {
	dir := filepath.Join(a.cfg.DataDir, "csi")
	if !filepath.IsAbs(dir) {
		var err error
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("agent config: --data-dir: %w", err)
		}
	}
	m, err := csivolume.New(csivolume.Options{StateDir: filepath.Join(dir, "state"), StagingDir: filepath.Join(dir, "staging"),
		Claims: csiClaims{a}, Plugins: csiPluginsOf{a}, Failed: a.csiTeardownFailed, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return m, nil
}

// runCSIVolumes undoes the publications of pods the node no longer runs, at once and
// then periodically, until ctx ends.
func (a *Agent) runCSIVolumes(ctx context.Context) {
	a.csiVols.Run(ctx, a.runsPod)
}

// csiTeardownFailed reports a failed teardown of a gone pod's csi volume: the manager
// logs it and the node's events show it to its operator (from the second attempt when
// the plugin is missing).
func (a *Agent) csiTeardownFailed(r csivolume.Record, attempt int, err error) {
	if attempt == 1 && errors.Is(err, csivolume.ErrPluginMissing) {
		return // at the agent's start its plugins may not be found yet: the retry tells
	}
	a.warnNode("CSIVolumeUnpublishFailed", fmt.Sprintf("cannot unpublish the csi volume %s/%s of pod %s at %s (plugin %s, attempt %d; retried with backoff): %v",
		r.Namespace, r.Volume, r.Pod, r.Dir, r.Plugin, attempt, err))
}

// csiPluginsOf gives the manager the node's CSI plugins: a.csiPluginClients, once the
// agent has them (none: every plugin is missing).
type csiPluginsOf struct{ a *Agent }

func (p csiPluginsOf) Client(name string) (*csi.Client, v4.CSIPlugin, bool) {
	if p.a.csiPluginClients == nil {
		return nil, v4.CSIPlugin{}, false
	}
	return p.a.csiPluginClients.Client(name)
}

// csiClaims are the server's claim routes, through the agent's servers.
type csiClaims struct{ a *Agent }

func (c csiClaims) Claim(ctx context.Context, req v4.CSIClaimRequest) (v4.CSIClaimGrant, error) {
	var g v4.CSIClaimGrant
	err := c.a.servers.do(ctx, func(cl *client.Client) error {
		var err error
		g, err = cl.AgentClaimVolume(ctx, req)
		return err
	})
	return g, err
}

// Release releases a claim. A 404 (the volume or the task group is gone) counts as
// released: the server drops the claims of what is gone itself.
func (c csiClaims) Release(ctx context.Context, req v4.CSIClaimRequest) error {
	err := c.a.servers.do(ctx, func(cl *client.Client) error { return cl.AgentReleaseVolume(ctx, req) })
	if client.IsNotFound(err) {
		return nil
	}
	return err
}
