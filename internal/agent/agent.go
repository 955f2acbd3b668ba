// Package agent is berth's node agent (docs/agent.md): it registers its node, heartbeats,
// watches the task groups the server binds to the node, makes them real with the
// executor, reports their status, and serves their logs and actions to the server. It
// never decides placement, and it never stops a workload because it restarts or because
// the server cannot be reached: after a restart it adopts what still runs.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/csiplugins"
	"github.com/berthhq/berth/internal/csivolume"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/devices/plugin"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/flexvolume"
	"github.com/berthhq/berth/internal/hostports"
	"github.com/berthhq/berth/internal/instvol"
	"github.com/berthhq/berth/internal/netsvc"
	"github.com/berthhq/berth/internal/netsvc/lbgroup"
)

// Agent is one node's agent. Create it with New and call Run once.
type Agent struct {
	cfg      Config
	log      *slog.Logger
	servers  *servers
	reporter *reporter
	// reports makes status writes and full reports take turns: one stream at a time
	// besides the task group watch and the heartbeat stream, or, with a server that
	// offers only HTTP/1.1, one connection (agentMaxConns).
	reports sync.Mutex

	// Set by Run before any goroutine starts.
	runCtx  context.Context
	drivers map[string]driver.Driver
	// containerRuntime is the runtime of the open container driver (RuntimeDocker,
	// RuntimeContainerd), empty without one: the node's AttrContainerRuntime.
	containerRuntime string
	// containerRuntimes are the runtime handlers pods may name (runtimes.go), read when
	// the container driver opens: the node's v4.AttrContainerRuntimes.
	containerRuntimes []string
	exec              *executor.Executor
	// nodeUsage measures the node for GET /v1/node/usage (nodeusage.go).
	nodeUsage *nodeSampler
	// revocableSent is the last lending report the server took (revocable.go): a
	// registration carries it, so that it does not clear the node's.
	revocableSent atomic.Pointer[v4.RevocableStatus]
	// catalog is every service and its endpoints, when the node follows them
	// (Config.followsCatalog, netsvc.go); nil otherwise.
	catalog *netsvc.Catalog
	// nodeEvents queues the events of the node, of its load-balancer group's services
	// and of its pods for a server (events.go).
	nodeEvents chan v4.AgentEvent
	dnsAddr    string // guarded by mu
	ckpt       *checkpoint
	addr       string    // advertised agent address
	id         *identity // the node's certificate (identity.go)
	guard      guard     // what the node's operator allows workloads (guard.go)
	gpus       *gpu.Manager
	plugins    *plugin.Manager // nil without Config.DevicePluginDir
	metrics    *agentMetrics
	busyPorts  *busyPorts           // the node's busy ports (busyports.go)
	vols       *instvol.Dirs        // the node's instance volumes (volumes.go)
	flex       *flexvolume.Manager  // nil without Config.VolumePluginDir (flexvolumes.go)
	csiPlugins *csiplugins.Registry // the node's CSI plugins (csiplugins.go)
	csiReport  *csiReport
	csiVols    *csivolume.Manager // the pods' csi volumes (csivolumes.go)
	volSweep   chan struct{}      // asks volumesLoop for a sweep (volumes.go)
	// nodeChanges asks for the node to be registered again (its cards or its device
	// plugins' resources changed); reregisterLoop serves it.
	nodeChanges chan struct{}
	// owner is this node of this cluster: the drivers touch only its tasks
	// (ownership.go). Set by Run once the identity is known.
	owner driver.Owner

	// csiPluginClients are the node's CSI plugins the csi volumes use (the plugin
	// registry); nil: none.
	csiPluginClients csivolume.PluginClients

	mu sync.Mutex
	// desired are the task groups the server binds to the node, as last seen.
	desired map[string]*v4.TaskGroup
	// ops are the kills and removals in progress, run by goroutines counted in opsWG.
	ops   map[string]*op
	opsWG sync.WaitGroup
	// execWG counts the exec sessions (hijacked connections), which Run ends and waits for.
	execWG sync.WaitGroup

	ran   bool
	ready chan struct{} // closed once Run serves (Ready)
}

// New checks cfg and returns an agent; nothing runs until Run.
func New(cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	volumes, err := parseHostVolumes(cfg.HostVolumes)
	if err != nil {
		return nil, fmt.Errorf("agent config: --host-volumes: %w", err)
	}
	profiles, err := loadSecurityProfiles(cfg.SecurityProfiles)
	if err != nil {
		return nil, fmt.Errorf("agent config: --security-profiles: %w", err)
	}
	forbidden := cfg.ForbiddenTaskGroups
	if forbidden == nil {
		forbidden = DefaultForbiddenGroups
	}
	users, err := newUserPolicy(cfg.TaskUsers, forbidden)
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeName), desired: map[string]*v4.TaskGroup{}, ops: map[string]*op{},
		nodeChanges: make(chan struct{}, 1), nodeEvents: make(chan v4.AgentEvent, nodeEventQueue), metrics: newAgentMetrics(), busyPorts: newBusyPorts(cfg.ProcRoot, cfg.PortRanges),
		guard: guard{privileged: cfg.AllowPrivileged, volumes: volumes, seccomp: profiles, users: users, protected: protectedPaths(cfg),
			flexVolumes: cfg.VolumePluginDir != ""}, ready: make(chan struct{})}
	for _, u := range cfg.ServerURLs { // fail now on a bad address, not after joining
		pu, err := client.ParseServerURL(u)
		if err != nil {
			return nil, fmt.Errorf("agent config: server %q: %w", u, err)
		}
		if pu.Scheme != "https" {
			return nil, fmt.Errorf("agent config: server %q: agents reach servers over https only (the join token and the node's traffic never cross the network in the clear)", u)
		}
	}
	a.vols, a.volSweep = instvol.New(filepath.Join(cfg.DataDir, "volumes")), make(chan struct{}, 1)
	if a.flex, err = a.newFlexVolumes(); err != nil {
		return nil, err
	}
	a.newCSIPlugins()
	a.csiPluginClients = a.csiPlugins
	if a.csiVols, err = a.newCSIVolumes(); err != nil {
		return nil, err
	}
	a.reporter = newReporter(a.putStatus, func(ns, name string) { a.removeLater(ns, name, "deleted on the server") })
	a.reporter.sendMany = (&statusBatches{statuses: a.putStatuses, report: a.sendReport}).send
	return a, nil
}

// Ready is closed once Run has started the executor and listens; Addr is valid then.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Addr is the address the agent advertises for logs and actions (valid after Ready).
func (a *Agent) Addr() string { return a.addr }

// NodeName is the name the agent registers its node under.
func (a *Agent) NodeName() string { return a.cfg.NodeName }

// shutdownGrace bounds how long Run waits for the agent's HTTP requests (log streams) to
// end once it stops.
const shutdownGrace = 2 * time.Second

// Run runs the agent until ctx ends, then stops its own goroutines and returns. The
// workloads keep running: the next Run (or agent) adopts them. It returns an error only
// when it cannot start (data directory, checkpoint, node certificate, drivers, listen
// address); an unreachable server is retried for ever.
func (a *Agent) Run(ctx context.Context) (err error) {
	a.mu.Lock()
	if a.ran {
		a.mu.Unlock()
		return errors.New("agent: Run called twice")
	}
	a.ran = true
	a.mu.Unlock()

	if err := a.openState(ctx); err != nil {
		return err
	}
	closeDrivers, err := a.openDrivers(ctx)
	if err != nil {
		return err
	}
	defer closeDrivers()
	a.gpus = a.openGPUs()
	defer a.gpus.Close()
	a.openPlugins()
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("agent: listen on %s: %w", a.cfg.Listen, err)
	}
	tlsLn := tls.NewListener(ln, a.id.serverTLS())
	a.addr = advertiseAddr(a.cfg.Advertise, ln.Addr(), a.cfg.IP)

	dnsCfg, closeDNS, err := a.startDNS()
	if err != nil {
		ln.Close()
		return err
	}
	defer closeDNS()
	lb, err := a.newLBGroup()
	if err != nil {
		ln.Close()
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.runCtx = ctx
	a.exec = executor.New(a.executorConfig(dnsCfg))
	a.nodeUsage = newNodeSampler(a.exec)

	httpSrv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
	loops := a.startLoops(ctx, httpSrv, tlsLn, lb)
	close(a.ready)
	a.log.Info("berth agent started", "servers", a.cfg.ServerURLs, "listen", ln.Addr().String(), "advertise", a.addr, "dataDir", a.cfg.DataDir,
		"cluster", a.owner.Cluster)

	<-ctx.Done()
	a.shutdown(httpSrv, loops)
	return nil
}

// openState prepares the data directory, loads the checkpoint (and writes it, to fail
// now on an unwritable data dir, not at the first change), loads the node's identity,
// claims the node's tasks and makes the clients of the servers.
func (a *Agent) openState(ctx context.Context) (err error) {
	if err := prepareDataDir(a.cfg.DataDir, a.log); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if a.ckpt, err = loadCheckpoint(filepath.Join(a.cfg.DataDir, "checkpoint.json"), a.cfg.NodeName); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := a.ckpt.save(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if a.id, err = a.loadIdentity(ctx); err != nil {
		return err
	}
	if err := a.claimOwnership(); err != nil {
		return err
	}
	conns := agentMaxConns
	if a.cfg.followsCatalog() {
		conns = agentMaxConnsDNS
	}
	// HTTP/2: the heartbeat stream, the task group watch and the calls share one
	// connection to a server (servers.go).
	a.servers, err = newServers(a.cfg.ServerURLs, client.MultiplexedHTTPClient(a.id.clientTLS()), "", conns, a.log)
	return err
}

// executorConfig wires the executor to the node: its drivers, the server's data, the
// agent's reports and policy, and the device managers.
func (a *Agent) executorConfig(dnsCfg *executor.DNS) executor.Config {
	ecfg := executor.Config{
		NodeName: a.cfg.NodeName, HostIP: a.cfg.IP, DataDir: a.cfg.DataDir,
		Drivers: a.drivers, Data: dataSource{a}, Logger: a.log,
		Report: a.reportTaskGroup, Admit: a.guard.admit, DNS: dnsCfg, GPUs: a.gpus,
		Observer: a.metrics, Ports: &hostports.Checker{ProcRoot: a.cfg.ProcRoot},
		InstanceVolumes: a.vols, Event: a.taskGroupEvent, CSIVolumes: a.csiVols, CSIPluginDir: a.cfg.CSIPluginDir,
	}
	if a.plugins != nil {
		ecfg.Devices = a.plugins
	}
	ecfg.StepArtifacts = stepArtifacts{a}
	ecfg.StepFetch, _ = a.cfg.stepFetchPolicy() // checked by withDefaults
	if a.flex != nil {
		ecfg.FlexVolumes = a.flex
	}
	if a.cfg.TuneExecutor != nil {
		a.cfg.TuneExecutor(&ecfg)
	}
	return ecfg
}

// startLoops starts the agent's goroutines: its endpoint, the reporter, the node
// certificate's renewal, the connection to the servers, the proxy, the devices, the
// sender of events and the load-balancer group. They end with ctx (the endpoint with shutdown).
func (a *Agent) startLoops(ctx context.Context, httpSrv *http.Server, ln net.Listener, lb *lbgroup.Group) *sync.WaitGroup {
	var loops sync.WaitGroup
	loops.Go(func() {
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("agent endpoint stopped", "err", err)
		}
	})
	loops.Go(func() { a.reporter.run(ctx, a.log) })
	loops.Go(func() { a.id.cert.Run(ctx) })
	loops.Go(func() { a.connect(ctx) })
	loops.Go(func() { a.runProxy(ctx) })
	loops.Go(func() { a.runGPUs(ctx) })
	loops.Go(func() { a.runPlugins(ctx) })
	loops.Go(func() { a.volumesLoop(ctx) })
	loops.Go(func() { a.runFlexVolumes(ctx) })
	loops.Go(func() { a.runCSIPlugins(ctx) })
	loops.Go(func() { a.runCSIVolumes(ctx) })
	loops.Go(func() { a.refreshVolumesLoop(ctx) })
	loops.Go(func() { a.sendNodeEvents(ctx) })
	if lb != nil {
		loops.Go(func() { lb.Run(ctx) })
	}
	return &loops
}

// shutdown stops the endpoint and waits for the loops, the exec sessions, the executor's
// monitoring and the kills and removals in progress.
func (a *Agent) shutdown(httpSrv *http.Server, loops *sync.WaitGroup) {
	shutCtx, stop := context.WithTimeout(context.Background(), shutdownGrace)
	defer stop()
	if err := httpSrv.Shutdown(shutCtx); err != nil {
		httpSrv.Close() // a log stream with follow=true does not end by itself
	}
	loops.Wait()
	// Exec sessions end with ctx. One that saw the agent running counted itself under
	// a.mu, so taking a.mu once orders its Add before this Wait.
	a.mu.Lock()
	a.mu.Unlock() //nolint:staticcheck // an empty critical section on purpose
	a.execWG.Wait()
	// Closing the executor ends its monitoring (not the tasks) and releases kills that
	// wait for a pod; unfinished removals stay in the checkpoint for the next start.
	a.exec.Close()
	a.opsWG.Wait()
	a.log.Info("berth agent stopped; workloads keep running")
}

// connect registers the node, then runs heartbeats, full reports and the sync loop.
func (a *Agent) connect(ctx context.Context) {
	if !a.register(ctx) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.heartbeatLoop(ctx) })
	wg.Go(func() { a.reportLoop(ctx) })
	wg.Go(func() { a.followCatalog(ctx) })
	wg.Go(func() { a.reregisterLoop(ctx) })
	wg.Go(func() { a.busyPortsLoop(ctx) })
	wg.Go(func() { a.revocableLoop(ctx) })
	wg.Go(func() { a.csiPluginsLoop(ctx) })
	a.syncLoop(ctx)
	wg.Wait()
}

// putStatus sends one status report (the reporter's send).
func (a *Agent) putStatus(ctx context.Context, ns, name string, st v4.TaskGroupStatus) error {
	a.reports.Lock()
	defer a.reports.Unlock()
	return a.servers.do(ctx, func(c *client.Client) error { return c.AgentPutStatus(ctx, ns, name, st) })
}
