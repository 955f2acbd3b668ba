// Package csiplugins finds the CSI plugins of a node (docs/volumes.md, "Plugins"): each
// listens on <dir>/<name>/csi.sock in the agent's plugin directory, usually because a
// task group with a csiPlugin pod volume runs it. The Registry scans the directory at
// start and every few seconds, connects to each socket with internal/csi, asks the
// plugin what it is and offers (identity, capabilities, node info), probes it, and keeps
// a v4.CSIPlugin per plugin for the node's status. The agent reports the list when it
// changes and hands the clients to the callers that make CSI calls.
package csiplugins

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
)

// SocketName is the name of a plugin's socket in its directory.
const SocketName = "csi.sock"

// DefaultInterval is how often the directory is scanned and the plugins probed.
const DefaultInterval = 5 * time.Second

// Options configure a Registry.
type Options struct {
	// Dir is the plugin directory (required, absolute); Run creates it.
	Dir string
	// Interval is how often Dir is scanned (DefaultInterval when 0).
	Interval time.Duration
	// Client tunes the plugins' clients.
	Client csi.Options
	Logger *slog.Logger
}

// Registry is the node's CSI plugins. It is safe for concurrent use.
type Registry struct {
	opts    Options
	log     *slog.Logger
	changes chan struct{}

	// scan makes Scans take turns; it guards ignored.
	scan    sync.Mutex
	ignored map[string]string // names ignored, with why, as last logged

	mu      sync.Mutex
	plugins map[string]*plugin
	listed  []v4.CSIPlugin // what List returned when changes was last signalled
}

// plugin is one plugin found: its socket, its client and what it said.
type plugin struct {
	socket string
	ident  socketID // the socket file when it was connected: a new file is a restart
	client *csi.Client
	info   v4.CSIPlugin
}

// New returns a registry of opts.Dir; nothing is scanned until Run.
func New(opts Options) *Registry {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Registry{opts: opts, log: opts.Logger, changes: make(chan struct{}, 1),
		plugins: map[string]*plugin{}, ignored: map[string]string{}}
}

// Dir is the plugin directory.
func (r *Registry) Dir() string { return r.opts.Dir }

// Changes receives a value whenever List changed since it was last signalled (one value
// stands for any number of changes: read List then).
func (r *Registry) Changes() <-chan struct{} { return r.changes }

// List returns the plugins, sorted by name.
func (r *Registry) List() []v4.CSIPlugin {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listLocked()
}

func (r *Registry) listLocked() []v4.CSIPlugin {
	out := make([]v4.CSIPlugin, 0, len(r.plugins))
	for _, p := range r.plugins {
		out = append(out, clonePlugin(p.info))
	}
	slices.SortFunc(out, func(a, b v4.CSIPlugin) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Client returns the client of the plugin called name and what it last said; false when
// the node has no such plugin. The client stays the registry's: callers do not close it.
// A caller checks info.Healthy, and info.Controller or info.Node for the service it wants.
func (r *Registry) Client(name string) (*csi.Client, v4.CSIPlugin, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.plugins[name]
	if !ok {
		return nil, v4.CSIPlugin{}, false
	}
	return p.client, clonePlugin(p.info), true
}

// Run scans the directory now and every Interval until ctx ends, then closes the
// plugins' clients. It returns an error only when the directory cannot be made.
func (r *Registry) Run(ctx context.Context) error {
	if err := os.MkdirAll(r.opts.Dir, 0o750); err != nil {
		return err
	}
	defer r.closeAll()
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		r.Scan(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Scan looks at the directory once: it connects to new sockets, probes every plugin,
// forgets those whose socket went, and signals Changes when the list changed. Run calls
// it; tests call it to avoid waiting.
func (r *Registry) Scan(ctx context.Context) {
	r.scan.Lock()
	defer r.scan.Unlock()
	found := r.find()
	r.dropStale(found)
	r.mu.Lock()
	var gone []*plugin
	for name, p := range r.plugins {
		if s, ok := found[name]; !ok || s.path != p.socket || s.id != p.ident {
			gone = append(gone, p)
			delete(r.plugins, name)
		}
	}
	var probe []*plugin
	for name, s := range found {
		p, ok := r.plugins[name]
		if !ok {
			c, err := csi.New(name, s.path, r.opts.Client)
			if err != nil {
				r.ignore(name, err.Error())
				continue
			}
			p = &plugin{socket: s.path, ident: s.id, client: c, info: v4.CSIPlugin{Name: name}}
			r.plugins[name] = p
			r.log.Info("CSI plugin found", "plugin", name, "socket", s.path)
		}
		probe = append(probe, p)
	}
	r.mu.Unlock()
	for _, p := range gone {
		r.log.Info("CSI plugin gone", "plugin", p.info.Name, "socket", p.socket)
		p.client.Close()
	}
	r.probeAll(ctx, probe)
	r.signal()
}

// probeAll probes the plugins at once: one that hangs holds up only its own answer, for
// at most the client's probe timeout.
func (r *Registry) probeAll(ctx context.Context, ps []*plugin) {
	var wg sync.WaitGroup
	for _, p := range ps {
		r.mu.Lock()
		prev := p.info
		r.mu.Unlock()
		wg.Go(func() {
			info := describe(ctx, p.client, prev)
			r.mu.Lock()
			defer r.mu.Unlock()
			if info.Healthy != prev.Healthy || info.Message != prev.Message {
				r.log.Info("CSI plugin probed", "plugin", info.Name, "healthy", info.Healthy, "message", info.Message)
			}
			p.info = info
		})
	}
	wg.Wait()
}

// signal signals Changes when the list differs from the one last signalled.
func (r *Registry) signal() {
	r.mu.Lock()
	list := r.listLocked()
	same := reflect.DeepEqual(list, r.listed)
	if !same {
		r.listed = list
	}
	r.mu.Unlock()
	if same {
		return
	}
	select {
	case r.changes <- struct{}{}:
	default:
	}
}

// ignore logs, once per reason, why a name in the directory is not a plugin. Called
// during a Scan (r.scan held).
func (r *Registry) ignore(name, why string) {
	if r.ignored[name] == why {
		return
	}
	r.ignored[name] = why
	r.log.Warn("CSI plugin directory entry ignored", "dir", r.opts.Dir, "name", name, "reason", why)
}

// closeAll closes every client and forgets the plugins.
func (r *Registry) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, p := range r.plugins {
		p.client.Close()
		delete(r.plugins, name)
	}
}

func clonePlugin(p v4.CSIPlugin) v4.CSIPlugin {
	p.Topology = maps.Clone(p.Topology)
	p.ControllerCapabilities = slices.Clone(p.ControllerCapabilities)
	p.NodeCapabilities = slices.Clone(p.NodeCapabilities)
	return p
}
