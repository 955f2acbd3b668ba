package cli

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/daemon"
)

// registerDev registers berth dev's flags for its agent's cluster DNS server and service
// proxy: the agent's (agent_dns.go), with the same meanings, except that auto's port 53
// of the node's IP gives way to a free port of 127.0.0.1 when it is taken (another
// berth dev on the machine) or not root's to take.
func (f *agentDNSFlags) registerDev(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "dns-addr", agent.DNSAuto, "where its node's cluster DNS server listens (UDP and TCP): auto (port 53 of the node's IP; a free port of 127.0.0.1 when that is taken), HOST:PORT, or off")
	fl.StringSliceVar(&f.upstreams, "dns-upstream", nil, "resolvers, HOST:PORT, that other names are forwarded to (default: those of /etc/resolv.conf)")
	fl.StringVar(&f.domain, "cluster-domain", agent.DefaultClusterDomain, "the domain of the services' names")
	fl.StringVar(&f.proxy, "service-proxy", "auto", "forward the services' virtual IPs with nftables: auto (as root, on a kernel with nf_tables, with the DNS server on), on or off")
}

// devServices puts the DNS and proxy flags into the agent's config, and says in one log
// line when --service-proxy auto leaves the proxy off: the services' VIPs then do not
// answer on this machine, which a user would otherwise find out by a timeout.
func devServices(f *agentDNSFlags, acfg *agent.Config, changed func(string) bool, log *slog.Logger) error {
	off, err := f.apply(acfg, &agentFile{}, changed)
	if err != nil {
		return err
	}
	switch {
	case off == "":
	case acfg.DNSAddr == "":
		log.Info("service proxy off: " + off + "; services' VIPs do not answer on this machine")
	default:
		log.Warn("service proxy off: " + off + "; services' VIPs do not answer on this machine (their names and instance addresses do). " +
			"Run berth dev as root on a kernel with nf_tables for them, or give --service-proxy off to say so")
	}
	return nil
}

// devBanner tells a new user where berth runs and what to try first. node is what the
// in-process agent runs (no name without one), domain the services' domain; config is
// the CLI config file berth dev wrote ("" when it left the user's alone).
func devBanner(w io.Writer, addr, dataDir string, node daemon.DevNode, domain, config string) {
	url := "https://" + addr
	env := ""
	if config != "" {
		env = fmt.Sprintf("  CLI config: %s (other shells find the server and its CA there)\n", config)
	} else {
		env = fmt.Sprintf("  (other shells: export BERTH_SERVER=%s BERTH_CA_CERT=%s)\n", url, filepath.Join(dataDir, daemon.CAFile))
	}
	name, dns, proxy := node.Name, "off (--dns-addr)", "off: VIPs do not answer here (--service-proxy; the log says why)"
	switch {
	case name == "":
		name, dns, proxy = "none (--agent=false, or the log says why)", "none (no node)", "none (no node)"
	case node.DNSAddr != "":
		dns = fmt.Sprintf("%s (SVC.NS.svc.%s; processes find it in BERTH_DNS)", node.DNSAddr, domain)
	}
	if node.ProxyTable != "" {
		proxy = "on: VIP:port reaches the instances (nft list table ip " + node.ProxyTable + ")"
	}
	fmt.Fprintf(w, `
berth dev is running.
  API:      %s
  node:     %s
  DNS:      %s
  proxy:    %s
  data dir: %s
%s
Try:
  berth apply -f examples/
  berth get apps -A
  berth events -w

Stop with Ctrl-C (the data stays in the data dir).

`, url, name, dns, proxy, dataDir, env)
}
