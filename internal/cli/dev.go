package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/server"
	"github.com/berthhq/berth/internal/tracing"
)

// runDev runs the server and, once it serves, an agent of this machine in the same
// process, speaking the agent protocol over loopback: the agent joins with the join token
// the server keeps in the data dir, as any agent would. On SIGINT or SIGTERM the agent
// stops first (its workloads keep running), then the server.
func runDev(cmd *cobra.Command, o *options, f serverFlags) error {
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The server outlives the agent: it stops only once the agent has.
	serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()

	cfg, err := f.serverConfig(o, "", nil)
	if err != nil {
		return err
	}
	// Checked before anything starts: a bad flag is the user's to fix, not the agent's
	// to fail on after the server is up.
	devNode, err := f.devNode.config()
	if err != nil {
		return err
	}
	log := cfg.Logger
	// One process, one tracer provider: the server's and the agent's spans are berth-dev's.
	stopTracing, err := tracing.Setup(ctx, tracing.Config{Endpoint: f.otlpEndpoint, Service: "berth-dev", Version: Version, Logger: log})
	if err != nil {
		return err
	}
	defer stopTracing()
	var (
		mu        sync.Mutex
		agentDone chan error // set once the agent runs
	)
	cfg.OnReady = func(addr string) {
		node := ""
		if f.agent {
			token, err := os.ReadFile(filepath.Join(f.dataDir, server.JoinTokenFile))
			if err != nil {
				log.Error("no join token for the agent", "err", err)
			}
			acfg := agent.Config{
				ServerURLs: []string{"https://" + addr}, Token: strings.TrimSpace(string(token)),
				DataDir: filepath.Join(f.dataDir, "agent"), Listen: "127.0.0.1:0",
				Logger: log.With("component", "agent"),
			}
			acfg.NodeName, acfg.PortRanges = devNode.NodeName, devNode.PortRanges
			f.agentGuard.apply(&acfg)
			// The server's keys and etcd share the dev data dir: no workload path reaches it.
			acfg.ProtectedPaths = []string{f.dataDir}
			a, err := agent.New(acfg)
			if err != nil {
				log.Error("the agent cannot start; the server runs without it", "err", err)
			} else {
				node = a.NodeName()
				mu.Lock()
				if agentCtx.Err() == nil {
					agentDone = make(chan error, 1)
					go func() {
						err := a.Run(agentCtx)
						if err != nil {
							log.Error("the agent stopped; the server runs without it", "err", err)
						}
						agentDone <- err
					}()
				}
				mu.Unlock()
			}
		}
		admin, err := os.ReadFile(filepath.Join(f.dataDir, server.AdminTokenFile))
		if err != nil {
			log.Warn("no management token for the CLI config", "err", err)
		}
		config, err := writeDevConfig(o.env, "https://"+addr, filepath.Join(f.dataDir, server.CAFile), strings.TrimSpace(string(admin)))
		if err != nil {
			log.Warn("the CLI config file was not written", "err", err)
		}
		devBanner(o.out(), addr, f.dataDir, node, config)
	}
	agent.Version = Version

	// stopBoth stops the agent, waits for it, then stops the server; it returns the
	// agent's error.
	var once sync.Once
	var agentErr error
	stopBoth := func() {
		once.Do(func() {
			stopAgent()
			mu.Lock()
			done := agentDone
			mu.Unlock()
			if done != nil {
				agentErr = <-done
			}
			stopServer()
		})
	}
	serverDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-serverDone: // the server failed on its own
		}
		stopBoth()
	})
	err = server.Run(serverCtx, cfg)
	close(serverDone)
	wg.Wait()
	if agentErr != nil {
		agentErr = fmt.Errorf("agent: %w", agentErr)
	}
	return errors.Join(err, agentErr)
}

// devNodeFlags are berth dev's flags for its agent's node: another berth dev, or an agent
// of another cluster, on the same machine needs other random host ports (and may want
// another name; what each agent stops is decided by its cluster, not its node's name:
// docs/agent.md, "Ownership").
type devNodeFlags struct {
	nodeName   string
	portRanges []string
}

func (f *devNodeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.nodeName, "node-name", "", "the name of its agent's node (default: the host name)")
	cmd.Flags().StringSliceVar(&f.portRanges, "port-range", nil, "host ports for its node's random ports, BEGIN-END (default 31000-32000)")
}

// config is the agent config's part of the flags: node name and port ranges, checked.
func (f devNodeFlags) config() (agent.Config, error) {
	var cfg agent.Config
	if f.nodeName != "" {
		if err := v4.CheckNodeName(f.nodeName); err != nil {
			return cfg, fmt.Errorf("--node-name %q: %w", f.nodeName, err)
		}
		cfg.NodeName = f.nodeName
	}
	ranges, err := parsePortRanges(f.portRanges)
	if err != nil {
		return cfg, err
	}
	cfg.PortRanges = ranges
	return cfg, nil
}

// devConfigMark starts a CLI config file berth dev wrote; berth dev rewrites only such a
// file, never one the user wrote.
const devConfigMark = "# written by berth dev:"

// writeDevConfig points the CLI config file at this berth dev (its server, CA and
// management token), so that other shells need no flags. It returns the file's path, or ""
// when a config file of the user's own is there (left alone).
func writeDevConfig(e *env, server, caFile, token string) (string, error) {
	path, _, err := configPath(e)
	if err != nil || path == "" {
		return "", err
	}
	old, err := os.ReadFile(path)
	if err == nil && !strings.HasPrefix(string(old), devConfigMark) {
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	body := fmt.Sprintf("%s berth dev rewrites this file at each start while this line is first\nserver: %s\nca-cert: %s\n",
		devConfigMark, server, caFile)
	if token != "" {
		body += "token: " + token + "\n"
	}
	if err := atomicfile.Write(path, []byte(body), 0o600); err != nil {
		return "", err
	}
	return path, nil
}
