package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/server"
)

// runDev runs the server and, once it serves, an agent of this machine in the same
// process, speaking the agent protocol over loopback with a join token made for this run.
// On SIGINT or SIGTERM the agent stops first (its workloads keep running), then the server.
func runDev(cmd *cobra.Command, o *options, f serverFlags) error {
	token, err := randomToken()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The server outlives the agent: it stops only once the agent has.
	serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()

	cfg, err := f.serverConfig(o, token, nil)
	if err != nil {
		return err
	}
	log := cfg.Logger
	var (
		mu        sync.Mutex
		agentDone chan error // set once the agent runs
	)
	cfg.OnReady = func(addr string) {
		node := ""
		if f.agent {
			a, err := agent.New(agent.Config{
				ServerURLs: []string{"http://" + addr}, Token: token,
				DataDir: filepath.Join(f.dataDir, "agent"), Listen: "127.0.0.1:0",
				Logger: log.With("component", "agent"),
			})
			if err != nil {
				log.Error("the agent cannot start; the server runs without it", "err", err)
			} else {
				node = a.NodeName()
				mu.Lock()
				if agentCtx.Err() == nil {
					agentDone = make(chan error, 1)
					go func() { agentDone <- a.Run(agentCtx) }()
				}
				mu.Unlock()
			}
		}
		devBanner(o.out(), addr, f.dataDir, node)
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

// randomToken is a join token for one `berth dev` run: 32 random bytes in hex.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a join token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
