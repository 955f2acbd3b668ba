package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/executor/health"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// remoteWriteAttempts bounds the retries of one remote health write that loses races with
// the agent's status writes.
const remoteWriteAttempts = 10

// RemoteCheckController runs the REMOTE_HTTP and REMOTE_TCP health checks of the
// running task groups from the leader (docs/services.md, "Remote health checks"), as
// BCS's scheduler did, and records their result in the task group's status.remote: a
// failing instance is not ready, so it leaves its services' endpoints, and a rollout
// waits for it. Only a change of the result is written. The checks never kill an
// instance: that is what the agent's local checks are for.
type RemoteCheckController struct {
	store *store.Store
	log   *slog.Logger
	opts  Options
	tgs   *taskGroupView
	unit  time.Duration

	mu     sync.Mutex
	checks map[string]*remoteCheck // by namespace/name
	spawn  func(func())
}

// remoteCheck is the checking of one task group.
type remoteCheck struct {
	targets string // what it probes, to notice a change (a new address)
	cancel  context.CancelFunc
}

// NewRemoteCheckController builds the controller; Run drives it.
func NewRemoteCheckController(st *store.Store, opts Options) *RemoteCheckController {
	opts = opts.withDefaults()
	unit := opts.HealthTimeUnit
	if unit <= 0 {
		unit = time.Second
	}
	return &RemoteCheckController{store: st, log: opts.Logger.With("controller", "remote-check"), opts: opts,
		unit: unit, checks: map[string]*remoteCheck{}, tgs: &taskGroupView{cacheView{cache: opts.Caches.For(v4.KindTaskGroup)}}}
}

// Run checks until ctx ends.
func (c *RemoteCheckController) Run(ctx context.Context) error {
	return loop{caches: []*cache.Cache{c.tgs.cache},
		start: func(_ context.Context, spawn func(func())) error {
			c.mu.Lock()
			c.spawn = spawn
			c.mu.Unlock()
			return nil
		},
		work: func(ctx context.Context) {
			watchCache(ctx, c.tgs.cache, c.log, nil, func(ev store.Event) { c.sync(ctx, ev) })
		}}.run(ctx)
}

// sync starts, restarts or stops the checking of the task group of one event.
func (c *RemoteCheckController) sync(ctx context.Context, ev store.Event) {
	tg, ok := ev.Object.(*v4.TaskGroup)
	if !ok {
		return
	}
	key := tg.Metadata.Namespace + "/" + tg.Metadata.Name
	var probes []remoteProbe
	if ev.Type != store.Deleted && tg.Status.Phase == v4.StatusRunning && tg.Spec.Desired != v4.DesiredStopped {
		probes = remoteProbes(tg)
	}
	targets := probeTargets(probes)
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.checks[key]
	if cur != nil && cur.targets == targets {
		return
	}
	if cur != nil {
		cur.cancel()
		delete(c.checks, key)
	}
	if len(probes) == 0 || c.spawn == nil {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	c.checks[key] = &remoteCheck{targets: targets, cancel: cancel}
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	c.spawn(func() { c.check(cctx, ns, name, probes) })
}

// remoteProbe is one remote check of a task group, resolved to where it probes.
type remoteProbe struct {
	target string // "http://10.0.0.1:31001/healthz" or "tcp 10.0.0.1:31002"
	policy health.Policy
	probe  health.Probe
}

func probeTargets(ps []remoteProbe) string {
	ts := make([]string, len(ps))
	for i, p := range ps {
		ts[i] = p.target
	}
	return strings.Join(ts, " ")
}

// remoteProbes resolves the remote checks of a task group's tasks. A check whose port
// cannot be resolved yet (no address reported) is a probe that fails, saying so.
func remoteProbes(tg *v4.TaskGroup) []remoteProbe {
	var out []remoteProbe
	for _, h := range tg.Spec.Template.Spec.HealthChecks() {
		if !v4.RemoteCheck(h) {
			continue
		}
		rp := remoteProbe{policy: health.PolicyOf(h, time.Second)}
		var port int
		var portName string
		switch {
		case h.Type == v4.CheckRemoteHTTP && h.HTTP != nil:
			port, portName = h.HTTP.Port, h.HTTP.PortName
		case h.Type == v4.CheckRemoteTCP && h.TCP != nil:
			port, portName = h.TCP.Port, h.TCP.PortName
		default:
			continue // validation requires the block of the check's type
		}
		ip, p, err := checkAddress(tg, port, portName)
		switch {
		case err != nil:
			rp.target = "unresolved " + err.Error()
			rp.probe = func(context.Context) error { return err }
		case h.Type == v4.CheckRemoteHTTP:
			rp.target = health.URL(h.HTTP, ip, p)
			rp.probe = health.HTTP(rp.target, h.HTTP.Headers)
		default:
			rp.target = "tcp " + net.JoinHostPort(ip, strconv.Itoa(p))
			rp.probe = health.TCP(net.JoinHostPort(ip, strconv.Itoa(p)))
		}
		out = append(out, rp)
	}
	return out
}

// checkAddress is where a remote check of a task group probes: the port named portName
// (or port) reached as its service endpoints reach it (service_endpoints.go).
func checkAddress(tg *v4.TaskGroup, port int, portName string) (string, int, error) {
	e := endpointOf(&v4.Service{Spec: v4.ServiceSpec{Ports: []v4.ServicePort{{Name: portName, TargetPort: port}}}}, tg)
	if port > 0 { // a number: on the pod's address (the node's for host networking)
		if e.ContainerIP == "" {
			return "", 0, errors.New("no address reported yet")
		}
		return e.ContainerIP, port, nil
	}
	if len(e.Ports) == 0 {
		return "", 0, fmt.Errorf("port %q has no address yet", portName)
	}
	return e.Ports[0].IP, e.Ports[0].Port, nil
}

// check runs the probes of one task group until ctx ends, and writes the aggregate
// result whenever it changes: healthy when every probe's last result is.
func (c *RemoteCheckController) check(ctx context.Context, ns, name string, probes []remoteProbe) {
	var (
		mu      sync.Mutex
		results = make([]*health.Result, len(probes))
		written *v4.RemoteHealth
		wg      sync.WaitGroup
	)
	update := func() {
		mu.Lock()
		defer mu.Unlock()
		rh := &v4.RemoteHealth{Healthy: true}
		for i, r := range results {
			if r == nil {
				return // not every check answered yet
			}
			if !r.Healthy {
				rh.Healthy = false
				rh.Message = probes[i].target + ": " + r.Message
				break
			}
		}
		if written != nil && written.Healthy == rh.Healthy && written.Message == rh.Message {
			return
		}
		rh.Since = time.Now().UTC()
		if err := c.write(ctx, ns, name, rh); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("cannot record a remote health check", "taskgroup", ns+"/"+name, "err", err)
			}
			return
		}
		written = rh
	}
	for i, p := range probes {
		pol := p.policy
		pol.Interval = time.Duration(float64(pol.Interval) * float64(c.unit) / float64(time.Second))
		pol.Timeout = time.Duration(float64(pol.Timeout) * float64(c.unit) / float64(time.Second))
		pol.Grace = time.Duration(float64(pol.Grace) * float64(c.unit) / float64(time.Second))
		pol.ConsecutiveFailures = 0 // remote checks never kill
		wg.Go(func() {
			health.Run(ctx, pol, p.probe, func(r health.Result) {
				mu.Lock()
				results[i] = &r
				mu.Unlock()
				update()
			})
		})
	}
	wg.Wait()
}

// write records rh as the task group's remote health, retrying lost races with its
// agent's status writes; a task group that went is not an error.
func (c *RemoteCheckController) write(ctx context.Context, ns, name string, rh *v4.RemoteHealth) error {
	for range remoteWriteAttempts {
		o, err := c.store.Get(ctx, v4.KindTaskGroup, ns, name)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		tg := o.(*v4.TaskGroup)
		if tg.Status.Phase != v4.StatusRunning {
			return nil // it ended meanwhile: the watch stops this check
		}
		if cur := tg.Status.Remote; cur != nil && cur.Healthy == rh.Healthy && cur.Message == rh.Message {
			return nil // recorded already (by this check before its address changed)
		}
		tg.Status.Remote = rh
		err = c.store.Update(ctx, tg, store.Raw{})
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("task group %s/%s changed %d times while its remote health was written", ns, name, remoteWriteAttempts)
}

// running lists the task groups being checked (tests).
func (c *RemoteCheckController) running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.checks))
	for k := range c.checks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
