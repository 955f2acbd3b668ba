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
	// OnReady, if set, is called once the server serves and the agent (if any) has
	// started (or failed to), with the server's address and what the agent runs.
	OnReady func(addr string, node DevNode)
}

// DevNode is what berth dev's agent runs, for its banner.
type DevNode struct {
	// Name is the node's name; "" without an agent.
	Name string
	// DNSAddr is where the node's cluster DNS server listens; "" when it runs none.
	DNSAddr string
	// ProxyTable is the service proxy's nftables table; "" when it runs none.
	ProxyTable string
}

// devDNSFallback is where berth dev's DNS server listens when port 53 of the node's IP
// is not its to take (another berth dev has it, a resolver, no root): processes still
// find it (BERTH_DNS), and two berth dev never collide.
const devDNSFallback = "127.0.0.1:0"

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
		onReady := func(node DevNode) {
			if cfg.OnReady != nil {
				cfg.OnReady(addr, node)
			}
		}
		if cfg.Agent == nil || !dev.start(addr, *cfg.Agent, scfg, onReady) {
			onReady(DevNode{})
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
	done chan error     // set once the agent runs
	wg   sync.WaitGroup // the agent's Run and the wait for its start
}

// start starts the agent of acfg against the server at addr, and calls onReady once it
// has started (or stopped at its start). It returns false when the agent could not be
// made (the server then runs without it, and onReady is not called).
func (d *devAgent) start(addr string, acfg agent.Config, scfg ServerConfig, onReady func(DevNode)) bool {
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
	if acfg.DNSAddr == agent.DNSAuto {
		acfg.DNSFallback = devDNSFallback
	}
	// The server stops with the agent: nothing would update the table, and a later
	// cluster on the machine (a new data dir) gives out the same VIPs.
	acfg.RemoveProxyTableAtStop = true
	a, err := agent.New(acfg)
	if err != nil {
		log.Error("the agent cannot start; the server runs without it", "err", err)
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return false
	}
	d.done = make(chan error, 1)
	ran := make(chan struct{})
	d.wg.Go(func() {
		defer close(ran)
		err := a.Run(d.ctx)
		if err != nil {
			log.Error("the agent stopped; the server runs without it", "err", err)
		}
		d.done <- err
	})
	// The agent joins through the server, which serves only once this returns.
	d.wg.Go(func() {
		select {
		case <-a.Ready():
		case <-ran:
		case <-d.ctx.Done():
			return
		}
		var node DevNode // none: the agent stopped at its start
		select {
		case <-a.Ready():
			node = DevNode{Name: a.NodeName(), DNSAddr: a.DNSAddr(), ProxyTable: a.ProxyTable()}
		default:
		}
		onReady(node)
	})
	return true
}

// wait waits for the agent to stop, once its context ends, and returns its error.
func (d *devAgent) wait() error {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	if done == nil {
		return nil
	}
	err := <-done
	d.wg.Wait()
	return err
}
