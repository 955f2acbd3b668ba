package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/daemon"
)

// runDev runs `berth dev` (daemon.RunDev): the server and, once it serves, an agent of
// this machine in the same process, until SIGINT or SIGTERM; then it writes the CLI config
// and tells the user where berth runs.
func runDev(cmd *cobra.Command, o *options, f serverFlags) error {
	scfg, err := f.serverConfig(o, "", nil)
	if err != nil {
		return err
	}
	// Checked before anything starts: a bad flag is the user's to fix, not the agent's
	// to fail on after the server is up.
	devNode, err := f.devNode.config()
	if err != nil {
		return err
	}
	var logLimits agent.Config
	if err := f.agentLogs.apply(&logLimits, &agentFile{}, cmd.Flags().Changed); err != nil {
		return err
	}
	var acfg *agent.Config
	if f.agent {
		acfg = &agent.Config{NodeName: devNode.NodeName, PortRanges: devNode.PortRanges, LogLimits: logLimits.LogLimits}
		f.agentGuard.apply(acfg)
		if err := devServices(&f.devDNS, acfg, cmd.Flags().Changed, scfg.API.Logger); err != nil {
			return err
		}
	}
	cfg := daemon.DevConfig{Server: scfg, Agent: acfg, OnReady: func(addr string, node daemon.DevNode) {
		domain := ""
		if acfg != nil {
			domain = acfg.ClusterDomain
		}
		devReady(o, f.dataDir, addr, node, domain, scfg.API.Logger)
	}}
	agent.Version = Version
	// One process, one tracer provider: the server's and the agent's spans are berth-dev's.
	p := daemon.Process{Service: "berth-dev", Version: Version, TraceEndpoint: f.otlpEndpoint, Logger: scfg.API.Logger}
	return p.Run(cmdContext(cmd), func(ctx context.Context) error { return daemon.RunDev(ctx, cfg) })
}

// devReady points the CLI config file at the berth dev that now serves at addr, and
// tells the user where it runs.
func devReady(o *options, dataDir, addr string, node daemon.DevNode, domain string, log *slog.Logger) {
	admin, err := os.ReadFile(filepath.Join(dataDir, daemon.AdminTokenFile))
	if err != nil {
		log.Warn("no management token for the CLI config", "err", err)
	}
	config, err := writeDevConfig(o.env, "https://"+addr, filepath.Join(dataDir, daemon.CAFile), strings.TrimSpace(string(admin)))
	if err != nil {
		log.Warn("the CLI config file was not written", "err", err)
	}
	devBanner(o.out(), addr, dataDir, node, domain, config)
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
