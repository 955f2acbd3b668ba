package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/berthhq/berth/internal/agent"
)

// DevConfig configures a `berth dev` process: a server and, once it serves, an agent of
// this machine in the same process.
type DevConfig struct {
	Server ServerConfig
	// Agent is the in-process agent's node settings (name, port ranges, guards); nil runs
	// the server alone. RunDev fills in what the process decides: the server's URL, the
	// join token of the data dir, the agent's data dir (DATA-DIR/agent), a loopback
	// listener, the logger and the data dir as a protected path.
	Agent *agent.Config
	// OnReady, if set, is called once the server serves and the agent (if any) was
	// started, with the server's address and the agent's node name ("" without one).
	OnReady func(addr, node string)
}

// RunDev runs the server and an agent of this machine in one process, the agent speaking
// the agent protocol over loopback and joining with the join token the server keeps in
// the data dir, as any agent would. When ctx ends the agent stops first (its workloads
// keep running), then the server.
func RunDev(ctx context.Context, cfg DevConfig) error {
	// The server outlives the agent: it stops only once the agent has.
	serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	dev := &devAgent{ctx: agentCtx}
	scfg := cfg.Server
	scfg.OnReady = func(addr string) {
		node := ""
		if cfg.Agent != nil {
			node = dev.start(addr, *cfg.Agent, scfg)
		}
		if cfg.OnReady != nil {
			cfg.OnReady(addr, node)
		}
	}
	// stopBoth stops the agent, waits for it, then stops the server.
	var once sync.Once
	var agentErr error
	stopBoth := func() { once.Do(func() { stopAgent(); agentErr = dev.wait(); stopServer() }) }
	serverDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-serverDone: // the server failed on its own
		}
		stopBoth()
	})
	err := RunServer(serverCtx, scfg)
	close(serverDone)
	wg.Wait()
	if agentErr != nil {
		agentErr = fmt.Errorf("agent: %w", agentErr)
	}
	return errors.Join(err, agentErr)
}

// devAgent is berth dev's agent: started once the server serves, stopped before it.
type devAgent struct {
	ctx  context.Context
	mu   sync.Mutex
	done chan error // set once the agent runs
}

// start starts the agent of acfg against the server at addr and returns its node name
// ("" when it could not start: the server then runs without it).
func (d *devAgent) start(addr string, acfg agent.Config, scfg ServerConfig) string {
	log := scfg.API.Logger
	token, err := os.ReadFile(filepath.Join(scfg.DataDir, JoinTokenFile))
	if err != nil {
		log.Error("no join token for the agent", "err", err)
	}
	acfg.ServerURLs, acfg.Token = []string{"https://" + addr}, strings.TrimSpace(string(token))
	acfg.DataDir, acfg.Listen = filepath.Join(scfg.DataDir, "agent"), "127.0.0.1:0"
	acfg.Logger = log.With("component", "agent")
	// The server's keys and etcd share the dev data dir: no workload path reaches it.
	acfg.ProtectedPaths = []string{scfg.DataDir}
	a, err := agent.New(acfg)
	if err != nil {
		log.Error("the agent cannot start; the server runs without it", "err", err)
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() == nil {
		d.done = make(chan error, 1)
		go func() {
			err := a.Run(d.ctx)
			if err != nil {
				log.Error("the agent stopped; the server runs without it", "err", err)
			}
			d.done <- err
		}()
	}
	return a.NodeName()
}

// wait waits for the agent to stop, once its context ends, and returns its error.
func (d *devAgent) wait() error {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	if done == nil {
		return nil
	}
	return <-done
}
