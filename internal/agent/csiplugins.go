package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/csiplugins"
)

// CSI plugins (docs/volumes.md, "Plugins"): the registry finds the plugins listening in
// --csi-plugin-dir and probes them; the agent reports them in its node's
// status.csiPlugins when the list changes and after every registration (which sends them
// too, so it never clears them), and serves the server's controller calls through them
// (csicontroller.go).

// csiReport is the node's CSI plugins as the server last took them.
type csiReport struct {
	mu    sync.Mutex
	sent  []v4.CSIPlugin
	known bool // sent is what the server has
	kick  chan struct{}
}

// newCSIPlugins makes the registry of cfg.CSIPluginDir.
func (a *Agent) newCSIPlugins() {
	a.csiPlugins = csiplugins.New(csiplugins.Options{Dir: a.cfg.CSIPluginDir, Logger: a.log})
	a.csiReport = &csiReport{kick: make(chan struct{}, 1)}
}

// runCSIPlugins runs the registry until ctx ends.
func (a *Agent) runCSIPlugins(ctx context.Context) {
	if err := a.csiPlugins.Run(ctx); err != nil {
		a.log.Error("cannot watch the CSI plugin directory; the node reports no CSI plugins", "dir", a.cfg.CSIPluginDir, "err", err)
	}
}

// csiRegistered tells the report loop that a registration sent the list it had then:
// the loop sends the list again unless it is that one.
func (a *Agent) csiRegistered(sent []v4.CSIPlugin) {
	r := a.csiReport
	r.mu.Lock()
	r.sent, r.known = sent, true
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// csiPluginsLoop sends the node's CSI plugins whenever the registry's list changed or a
// registration happened, until ctx ends; a failed send is retried at the next scan's
// change or every interval.
func (a *Agent) csiPluginsLoop(ctx context.Context) {
	retry := a.cfg.BusyPortsInterval
	failing := false
	for {
		err := a.sendCSIPlugins(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			a.log.Warn("cannot report the node's CSI plugins; will retry", "err", err)
		case err == nil && failing:
			a.log.Info("the node's CSI plugins are reported again")
		}
		failing = err != nil
		wait := a.csiPlugins.Changes()
		select {
		case <-ctx.Done():
			return
		case <-wait:
		case <-a.csiReport.kick:
		case <-afterIf(failing, retry):
		}
	}
}

// sendCSIPlugins sends the registry's list if the server does not have it.
func (a *Agent) sendCSIPlugins(ctx context.Context) error {
	list := a.csiPlugins.List()
	r := a.csiReport
	r.mu.Lock()
	same := r.known && reflect.DeepEqual(r.sent, list)
	r.mu.Unlock()
	if same {
		return nil
	}
	if err := a.servers.do(ctx, func(c *client.Client) error { return c.AgentCSIPlugins(ctx, a.cfg.NodeName, list) }); err != nil {
		return err
	}
	r.mu.Lock()
	r.sent, r.known = list, true
	r.mu.Unlock()
	a.log.Info("the node's CSI plugins changed", "plugins", pluginNames(list))
	return nil
}

func pluginNames(ps []v4.CSIPlugin) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		name := p.Name
		if !p.Healthy {
			name += " (unhealthy)"
		}
		out = append(out, name)
	}
	return out
}

// afterIf fires after d when on, never otherwise.
func afterIf(on bool, d time.Duration) <-chan time.Time {
	if !on {
		return nil
	}
	return time.After(d)
}

// csiPluginDir is --csi-plugin-dir made absolute, DATA-DIR/csi/plugins by default.
func csiPluginDir(dir, dataDir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(dataDir, "csi", "plugins")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("agent config: --csi-plugin-dir %q: %w", dir, err)
	}
	return abs, nil
}
