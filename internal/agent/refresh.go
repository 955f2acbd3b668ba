package agent

import (
	"context"
	"math/rand/v2"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// DefaultVolumeRefreshInterval is how often the agent compares the configMap and
// secret volumes of its running pods with their objects (docs/pods.md, "Volumes").
const DefaultVolumeRefreshInterval = 10 * time.Second

// volumeFetchesPerSecond bounds the requests the refresh sends the server: one per
// followed volume, at most this many a second for the whole node, so a node of many
// pods stretches its round instead of loading the server.
const volumeFetchesPerSecond = 20

// refreshVolumesLoop rewrites the configMap and secret volumes of running pods whose
// object changed, a round every interval (jittered by ±20%, so that the nodes of a
// cluster do not ask together), until ctx ends. The agent API has no watch of
// configmaps and secrets: a round of gets is what follows them.
func (a *Agent) refreshVolumesLoop(ctx context.Context) {
	interval := a.cfg.VolumeRefreshInterval
	if interval <= 0 {
		interval = DefaultVolumeRefreshInterval
	}
	lastErr := map[string]string{} // by pod: an error is logged when it changes
	for {
		jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(interval))
		if !sleep(ctx, interval+jitter) {
			return
		}
		a.refreshVolumes(ctx, lastErr)
	}
}

// refreshVolumes runs one round over the running pods with followed volumes, at most
// volumeFetchesPerSecond requests a second.
func (a *Agent) refreshVolumes(ctx context.Context, lastErr map[string]string) {
	tick := time.NewTicker(time.Second / volumeFetchesPerSecond)
	defer tick.Stop()
	seen := map[string]bool{}
	for _, p := range a.exec.List() {
		if p.Status.Phase != v4.StatusRunning {
			continue
		}
		n := a.exec.FollowedVolumes(p.Namespace, p.Name)
		for range n {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		if n == 0 {
			continue
		}
		key := tgKey(p.Namespace, p.Name)
		seen[key] = true
		_, err := a.exec.RefreshVolumes(ctx, p.Namespace, p.Name)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != lastErr[key] && msg != "" {
			a.log.Warn("pod volumes not refreshed; their files stay as they were", "namespace", p.Namespace, "name", p.Name, "err", err)
		}
		lastErr[key] = msg
	}
	for key := range lastErr {
		if !seen[key] {
			delete(lastErr, key)
		}
	}
}
