package lbgroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/netsvc"
)

// watchdogEvery is how often the group checks that its HAProxy still runs.
const watchdogEvery = 5 * time.Second

// Config configures a node's load-balancer group.
type Config struct {
	// Group is the group served (BCSGROUP).
	Group string
	// Dir holds HAProxy's configuration, pid file and runtime socket.
	Dir string
	// HAProxy is the haproxy command (default "haproxy").
	HAProxy string
	// BindAddr and HTTPPort: see Settings.
	BindAddr string
	HTTPPort int
	// Warn reports what an operator must see (an event on the node): a configuration
	// HAProxy refused, ports two services claim. It may be nil.
	Warn func(reason, message string)
	// WarnService reports what the owner of one service must see (an event on the
	// service): a port of it the node cannot listen on. It may be nil.
	WarnService func(namespace, name, reason, message string)
	Logger      *slog.Logger
}

// Group keeps a node's HAProxy serving the services exported to its group.
type Group struct {
	cat     *netsvc.Catalog
	changed <-chan struct{}
	cfg     Config
	set     Settings
	proc    haproxy

	cur      *plan  // what HAProxy runs, nil until known
	curShape string // cur's shape (render)
	refused  string // the last configuration HAProxy refused, not tried again
	warned   string // the last conflicts reported
	// left are the frontends left out because their port could not be bound, each
	// reported once while it stays out; probe tries a port (probeBind; tests replace it).
	left  map[string]unbound
	probe bindProbe
}

// New returns the group of cfg over cat; Run drives it.
func New(cat *netsvc.Catalog, cfg Config) (*Group, error) {
	if cfg.Group == "" || cfg.Dir == "" {
		return nil, errors.New("load-balancer group: a group and a directory are required")
	}
	if cfg.HAProxy == "" {
		cfg.HAProxy = "haproxy"
	}
	if cfg.HTTPPort == 0 {
		cfg.HTTPPort = 80
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("load-balancer group %s: %w", cfg.Group, err)
	}
	bin, err := exec.LookPath(cfg.HAProxy)
	if err != nil {
		return nil, fmt.Errorf("load-balancer group %s needs HAProxy (Debian: apt-get install haproxy): %w", cfg.Group, err)
	}
	h := haproxy{bin: bin, dir: cfg.Dir}
	return &Group{cat: cat, changed: cat.Subscribe(), cfg: cfg, proc: h, probe: probeBind,
		set: Settings{BindAddr: cfg.BindAddr, HTTPPort: cfg.HTTPPort, Socket: h.path(socketFile)}}, nil
}

// Run updates HAProxy once the catalog is first listed, after every change of the
// catalog, and when it finds HAProxy gone, until ctx ends (netsvc.Follow). HAProxy
// outlives the agent: it goes on serving while the agent restarts.
func (g *Group) Run(ctx context.Context) {
	watchdog := time.NewTicker(watchdogEvery)
	defer watchdog.Stop()
	netsvc.Follow(ctx, g.cat, g.changed, watchdog.C, "load-balancer group "+g.cfg.Group, g.cfg.Logger, g.Sync)
}

// maxStartAttempts bounds the starts of one update that HAProxy refused for a port
// another program took after the group tried it (each attempt leaves those out).
const maxStartAttempts = 3

// Sync brings HAProxy in line with the catalog: through the runtime API when only
// instances changed, else by a checked configuration and a reload. A frontend whose port
// cannot be bound is left out and reported on its service; the rest is served. A
// configuration HAProxy refuses is reported once and leaves the running one in place.
func (g *Group) Sync(ctx context.Context) error {
	exports := Export(g.cat.Services(), g.cfg.Group)
	pids := g.proc.running()
	next, text, shape := g.plan(exports, pids, nil)

	if len(next.listeners) == 0 && len(next.routes) == 0 {
		// Nothing to serve: HAProxy refuses to run without a listener.
		if err := g.proc.stop(); err != nil {
			return err
		}
		g.cur, g.curShape = nil, ""
		return nil
	}
	if g.cur != nil && len(pids) > 0 && shape == g.curShape {
		cmds := runtimeCommands(g.cur, next)
		if len(cmds) == 0 {
			return nil
		}
		err := runCommands(ctx, g.set.Socket, cmds)
		if err == nil {
			g.cur = next
			return g.writeConfig(text)
		}
		g.cfg.Logger.Warn("load-balancer group: the runtime API refused a change; reloading", "group", g.cfg.Group, "err", err)
	}
	if g.cur == nil && len(pids) > 0 {
		if live, err := os.ReadFile(g.proc.path(configFile)); err == nil && string(live) == text {
			g.cur, g.curShape = next, shape // an earlier run's HAProxy serves this already
			return nil
		}
	}
	if text == g.refused {
		return nil
	}
	if err := g.proc.check(ctx, text); err != nil {
		g.refused = text
		g.warn("LoadBalancerConfigRefused", fmt.Sprintf("group %s: HAProxy refused the new configuration; the running one stays: %v", g.cfg.Group, err))
		return nil
	}
	previous, _ := os.ReadFile(g.proc.path(configFile))
	failed := map[int]error{}
	for attempt := 1; ; attempt++ {
		if err := g.writeConfig(text); err != nil {
			return err
		}
		err := g.proc.start(ctx, pids)
		if err == nil {
			break
		}
		// A port taken between the probe and the start: the others still start.
		more := failedBinds(err.Error(), g.set)
		grew := false
		for port, why := range more {
			if _, ok := failed[port]; !ok {
				failed[port], grew = why, true
			}
		}
		if grew && attempt < maxStartAttempts {
			next, text, shape = g.plan(exports, pids, failed)
			if len(next.listeners) > 0 || len(next.routes) > 0 {
				continue
			}
		}
		g.refused = text
		if len(pids) > 0 && previous != nil {
			// The file says again what runs, for a reload or a restart of HAProxy.
			if werr := g.writeConfig(string(previous)); werr != nil {
				g.cur = nil
			}
		}
		g.warn("LoadBalancerStartFailed", fmt.Sprintf("group %s: HAProxy did not start: %v", g.cfg.Group, err))
		return nil
	}
	g.refused = ""
	g.cur, g.curShape = next, shape
	g.cfg.Logger.Info("load-balancer group: HAProxy (re)loaded", "group", g.cfg.Group,
		"backends", len(next.backends), "replaced", pids)
	return nil
}

// plan makes the plan of exports and its configuration, without the frontends whose
// port cannot be bound (tried now, or failed: refused by HAProxy's last start), and
// reports what it left out. Ports the running HAProxy (pids) serves are not tried: a
// reload hands them over.
func (g *Group) plan(exports []ExportService, pids []int, failed map[int]error) (*plan, string, string) {
	next := newPlan(exports, g.set, g.cur)
	g.reportConflicts(next.conflicts)
	served := map[int]bool{}
	if len(pids) > 0 {
		served = servedPorts(g.cur, g.set)
	}
	g.reportUnbound(next.leaveOut(g.set, served, g.probe, failed))
	text, shape := render(next, g.set)
	return next, text, shape
}

// reportUnbound reports each frontend left out once, on its service (the group's HTTP
// port on the node), and forgets those served again, so a port lost again is reported
// again.
func (g *Group) reportUnbound(list []unbound) {
	now := make(map[string]unbound, len(list))
	for _, u := range list {
		now[u.key()] = u
		if _, reported := g.left[u.key()]; reported {
			continue
		}
		if u.service == "" {
			g.warn("LoadBalancerPortUnavailable", fmt.Sprintf("group %s: the HTTP port %d cannot be bound (%v): the group's HTTP routes are not served on this node until it is free; its other ports are",
				g.cfg.Group, u.port, u.err))
			continue
		}
		msg := fmt.Sprintf("load-balancer group %s cannot listen on port %d on this node (%v): the port is left out until it is free; the group serves its other ports and services",
			g.cfg.Group, u.port, u.err)
		g.cfg.Logger.Warn("load-balancer group: a port is left out", "group", g.cfg.Group,
			"service", u.namespace+"/"+u.service, "port", u.port, "err", u.err)
		if g.cfg.WarnService != nil {
			g.cfg.WarnService(u.namespace, u.service, "LoadBalancerPortUnavailable", msg)
		}
	}
	g.left = now
}

func (g *Group) writeConfig(text string) error {
	if err := atomicfile.Write(g.proc.path(configFile), []byte(text), 0o600); err != nil {
		return fmt.Errorf("load-balancer group %s: write the configuration: %w", g.cfg.Group, err)
	}
	return nil
}

// reportConflicts reports the ports left out of the group, once per distinct list.
func (g *Group) reportConflicts(conflicts []string) {
	text := strings.Join(conflicts, "; ")
	if text == g.warned {
		return
	}
	g.warned = text
	if text != "" {
		g.warn("LoadBalancerPortConflict", fmt.Sprintf("group %s: left out: %s", g.cfg.Group, truncate(text, 800)))
	}
}

func (g *Group) warn(reason, msg string) {
	g.cfg.Logger.Warn("load-balancer group: "+msg, "reason", reason)
	if g.cfg.Warn != nil {
		g.cfg.Warn(reason, msg)
	}
}

// Config returns the configuration HAProxy runs with ("" before the first update).
func (g *Group) Config() string {
	data, err := os.ReadFile(g.proc.path(configFile))
	if err != nil {
		return ""
	}
	return string(data)
}
