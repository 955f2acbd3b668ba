package cli

import (
	"fmt"
	"net"
	"os/exec"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
)

// agentLBFlags make the node serve a BCS load-balancer group with HAProxy
// (docs/services.md, "Load-balancer groups").
type agentLBFlags struct {
	group    string
	bind     string
	httpPort int
	haproxy  string
}

func (f *agentLBFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.group, "lb-group", "", "serve the services exported to this load-balancer group (their BCSGROUP label) with HAProxy")
	fl.StringVar(&f.bind, "lb-bind", "", "the address the load-balancer group listens on (default: every address of the node)")
	fl.IntVar(&f.httpPort, "lb-http-port", 80, "the port of the load-balancer group's HTTP services, routed by host and path")
	fl.StringVar(&f.haproxy, "haproxy", "haproxy", "the haproxy command of the load-balancer group")
}

// apply puts the flags (or the config file's keys) into cfg.
func (f *agentLBFlags) apply(cfg *agent.Config, file *agentFile, changed func(string) bool) error {
	group, bind, port, bin := f.group, f.bind, f.httpPort, f.haproxy
	if !changed("lb-group") && file.LBGroup != "" {
		group = file.LBGroup
	}
	if !changed("lb-bind") && file.LBBind != "" {
		bind = file.LBBind
	}
	if !changed("lb-http-port") && file.LBHTTPPort != 0 {
		port = file.LBHTTPPort
	}
	if !changed("haproxy") && file.HAProxy != "" {
		bin = file.HAProxy
	}
	if group == "" {
		cfg.HAProxy = bin // to stop what an earlier run with a group left
		return nil
	}
	if !v4.ValidLBGroup(group) {
		return fmt.Errorf("--lb-group %q: give a group name of lowercase letters, digits and '-'", group)
	}
	if bind != "" && net.ParseIP(bind) == nil {
		return fmt.Errorf("--lb-bind %q: give an IP address of this node", bind)
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("--lb-http-port %d: give a port 1-65535", port)
	}
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("--lb-group needs HAProxy (apt-get install haproxy, or --haproxy PATH): %w", err)
	}
	cfg.LBGroup, cfg.LBBind, cfg.LBHTTPPort, cfg.HAProxy = group, bind, port, bin
	return nil
}
