// Package sim runs many simulated nodes in one process, to measure a cluster at a scale
// no test machine has (docs/benchmarks.md, "Cluster benchmark"). By default each node is
// a light node (node.go): it speaks the agent protocol as an agent does (join with the
// join token, registration over mTLS, a heartbeat stream, the task group list and
// watch, status reports and periodic reports, on one HTTP/2 connection as the agent's) and
// runs nothing: its task groups go Running after a start delay (none by default) and,
// with a RunTime, end with an exit code drawn from ExitCodes. With FullAgents (implied by
// FollowServices and GPUs) each node is a whole agent over fake drivers instead, its
// executor, data dir and local API included: closer to a machine, and far dearer.
package sim

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
)

// Defaults of Config.
const (
	DefaultPrefix = "sim"
	// A task group goes Running as soon as its node hears of it, by default.
	DefaultMinStartDelay = 0
	DefaultMaxStartDelay = 0
	// MaxStartDelay bounds the start delay and RunTime.
	MaxDelay = time.Hour
	// MaxNodes bounds one simulator: each node holds a few connections (a whole agent a
	// listener too).
	MaxNodes = 50000
)

// Config configures a simulation.
type Config struct {
	// ServerURLs, Token and CACertFile are those of `berth agent`.
	ServerURLs []string
	Token      string
	CACertFile string
	// Nodes is how many nodes to run; they are named Prefix-00000, Prefix-00001, ...
	Nodes  int
	Prefix string
	// DataDir holds each whole agent's data dir (DataDir/{name}); light nodes describe
	// its disk as theirs. Required.
	DataDir string
	// Ramp spreads the nodes' starts over this time, so that thousands of joins do not
	// arrive in the same instant (0: all at once).
	Ramp time.Duration
	// HeartbeatInterval and ReportInterval are the agents' (0: theirs by default).
	HeartbeatInterval time.Duration
	ReportInterval    time.Duration
	// MinStartDelay and MaxStartDelay bound a task group's start delay, drawn evenly
	// between them (both 0: Running at once).
	MinStartDelay time.Duration
	MaxStartDelay time.Duration
	// RunTime, when set, is how long a task group runs before its tasks exit, with a code
	// drawn from ExitCodes (by weight; none: 0). Light nodes only.
	RunTime   time.Duration
	ExitCodes []ExitCode
	// FullAgents runs every node as a whole agent (FollowServices and GPUs imply it).
	FullAgents bool
	// Logger receives the simulator's own messages, and the agents' from AgentLogLevel
	// (the zero value is Info; New makes it Error unless AgentLogLevelSet).
	Logger           *slog.Logger
	AgentLogLevel    slog.Level
	AgentLogLevelSet bool
	// FollowServices makes every node follow the catalog of services and endpoints, as
	// an agent with the DNS server does, and measures how soon a ready instance reaches
	// each (CatalogStats).
	FollowServices bool
	// GPUs are the cards every node registers (ParseGPUs, ReadGPUFile), each node's
	// with UUIDs of its own; none when empty. Shares are not enforced (sharing mode
	// none): the fake drivers run nothing on them.
	GPUs []v4.NodeGPU
}

// Sim is a running simulation. Create it with New, run it with Run.
type Sim struct {
	cfg    Config
	log    *slog.Logger
	nodes  []simNode
	ready  atomic.Int64
	failed atomic.Int64

	catalog *catalogLatency // with FollowServices

	// What light nodes share: the agents' logger, the join client, the beats, the
	// machine they describe, their IP, and the servers' CA (serverRoots).
	agentLog *slog.Logger
	joiner   *client.Client
	beats    *beatScheduler
	machine  v4.NodeResources
	ip       string
	loopback bool // every server is on an IPv4 loopback address: nodes dial from their own
	rootsMu  sync.Mutex
	roots    *x509.CertPool

	mu     sync.Mutex
	freeze map[string]context.CancelFunc // stops a running node's agent (Freeze)
	frozen []FrozenNode                  // the nodes frozen so far (Stats)
}

// New checks cfg and builds every node's agent; nothing runs until Run.
func New(cfg Config) (*Sim, error) {
	switch {
	case cfg.Nodes <= 0 || cfg.Nodes > MaxNodes:
		return nil, fmt.Errorf("sim: nodes %d: give 1 to %d", cfg.Nodes, MaxNodes)
	case cfg.DataDir == "":
		return nil, errors.New("sim: no data directory")
	case len(cfg.ServerURLs) == 0:
		return nil, errors.New("sim: no server address")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	switch {
	case cfg.MinStartDelay < 0 || cfg.MaxStartDelay < 0 || cfg.RunTime < 0:
		return nil, errors.New("sim: a start delay or run time is negative")
	case cfg.MaxStartDelay < cfg.MinStartDelay:
		return nil, fmt.Errorf("sim: the start delay's maximum %s is below its minimum %s", cfg.MaxStartDelay, cfg.MinStartDelay)
	case cfg.MaxStartDelay > MaxDelay || cfg.RunTime > MaxDelay:
		return nil, fmt.Errorf("sim: a start delay or run time is over %s", MaxDelay)
	case len(cfg.ExitCodes) > 0 && cfg.RunTime == 0:
		return nil, errors.New("sim: exit codes without a run time: the tasks never exit")
	case cfg.RunTime > 0 && (cfg.FullAgents || cfg.FollowServices || len(cfg.GPUs) > 0):
		return nil, errors.New("sim: a run time is for light nodes, not whole agents (follow services, GPUs)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Sim{cfg: cfg, log: cfg.Logger, ip: "127.0.0.1"}
	if cfg.FollowServices {
		s.catalog = newCatalogLatency()
	}
	if !cfg.AgentLogLevelSet {
		cfg.AgentLogLevel = slog.LevelError // thousands of agents: their errors only
	}
	agentLog := slog.New(slog.NewTextHandler(io.Discard, nil))
	if cfg.Logger.Enabled(context.Background(), cfg.AgentLogLevel) {
		agentLog = slog.New(levelFloor{cfg.Logger.Handler(), cfg.AgentLogLevel})
	}
	s.agentLog = agentLog
	if !cfg.FullAgents && !cfg.FollowServices && len(cfg.GPUs) == 0 {
		if err := s.prepareLight(); err != nil {
			return nil, err
		}
		for i := range cfg.Nodes {
			s.nodes = append(s.nodes, newLightNode(s, i, fmt.Sprintf("%s-%05d", cfg.Prefix, i)))
		}
		return s, nil
	}
	for i := range cfg.Nodes {
		name := fmt.Sprintf("%s-%05d", cfg.Prefix, i)
		acfg := agent.Config{
			ServerURLs: cfg.ServerURLs, Token: cfg.Token, CACertFile: cfg.CACertFile,
			NodeName: name, IP: "127.0.0.1", DataDir: filepath.Join(cfg.DataDir, name), Listen: "127.0.0.1:0",
			HeartbeatInterval: cfg.HeartbeatInterval, ReportInterval: cfg.ReportInterval,
			Drivers: s.drivers(), Logger: agentLog.With("node", name),
		}
		if len(cfg.GPUs) > 0 {
			acfg.GPUSource, acfg.GPUSharing = gpu.NewFake(cardsFor(name, cfg.GPUs)), agent.GPUSharingNone
		}
		if s.catalog != nil {
			acfg.OnCatalog = func(o v4.Object) { s.catalog.observe(name, o) }
			acfg.TuneExecutor = func(ec *executor.Config) {
				report := ec.Report
				ec.Report = func(ns, tg string, st v4.TaskGroupStatus) {
					s.catalog.reported(ns, tg, st)
					report(ns, tg, st)
				}
			}
		}
		a, err := agent.New(acfg)
		if err != nil {
			return nil, fmt.Errorf("sim: node %s: %w", name, err)
		}
		s.nodes = append(s.nodes, a)
	}
	return s, nil
}

// drivers are one node's fake drivers, whose starts take the configured delay.
func (s *Sim) drivers() map[string]driver.Driver {
	hook := func(ctx context.Context, _ *driver.Task) error {
		return ctxtime.Sleep(ctx, s.startDelay())
	}
	p, d := fake.New(driver.KindProcess), fake.NewDocker("10.88.0.2")
	p.SetStartHook(hook)
	d.SetStartHook(hook)
	return map[string]driver.Driver{driver.KindProcess: p, driver.KindDocker: d}
}

// Ready is how many nodes' agents serve; Failed how many stopped with an error.
func (s *Sim) Ready() int  { return int(s.ready.Load()) }
func (s *Sim) Failed() int { return int(s.failed.Load()) }

// Run starts every node (spread over Ramp) and runs them until ctx ends; it returns once
// every agent stopped. An agent that fails is logged and counted, and the others go on.
func (s *Sim) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.catalog != nil {
		wg.Go(func() { s.logCatalog(ctx) })
	}
	if s.beats != nil {
		wg.Go(func() { s.beats.run(ctx) })
	}
	step := time.Duration(0)
	if len(s.nodes) > 1 {
		step = s.cfg.Ramp / time.Duration(len(s.nodes))
	}
	start := time.Now()
	for i, a := range s.nodes {
		if step > 0 {
			if wait := time.Until(start.Add(time.Duration(i) * step)); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		actx, freeze := context.WithCancel(ctx)
		s.mu.Lock()
		if s.freeze == nil {
			s.freeze = map[string]context.CancelFunc{}
		}
		s.freeze[a.NodeName()] = freeze
		s.mu.Unlock()
		wg.Go(func() {
			defer freeze()
			readyDone := make(chan struct{})
			go func() {
				defer close(readyDone)
				select {
				case <-a.Ready():
					s.ready.Add(1)
				case <-actx.Done():
				}
			}()
			if err := a.Run(actx); err != nil {
				s.failed.Add(1)
				s.log.Error("a simulated node stopped", "node", a.NodeName(), "err", err)
			}
			<-readyDone
		})
	}
	wg.Wait()
	return nil
}

// Freeze stops a node's agent at once, as if its machine died: it beats, reports and
// watches no more (its tasks are left as they are). It reports whether the node runs.
func (s *Sim) Freeze(node string) bool {
	_, ok := s.FreezeNode(node)
	return ok
}

// FreezeNode is Freeze, and says when the node's last beat left and at what interval its
// server had told it to beat (a light node's; a whole agent's are left zero): the node's
// TTL runs from that beat.
func (s *Sim) FreezeNode(node string) (FrozenNode, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	freeze, ok := s.freeze[node]
	if !ok {
		return FrozenNode{}, false
	}
	fn := FrozenNode{Node: node}
	for _, sn := range s.nodes {
		if n, light := sn.(*lightNode); light && n.name == node {
			fn.LastBeat, fn.Interval = n.halt()
			break
		}
	}
	freeze()
	delete(s.freeze, node)
	s.frozen = append(s.frozen, fn)
	return fn, true
}

// levelFloor passes on only the records at or above its level.
type levelFloor struct {
	slog.Handler
	min slog.Level
}

func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}
func (h levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{h.Handler.WithAttrs(a), h.min}
}
func (h levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{h.Handler.WithGroup(n), h.min}
}
