package cli

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/netsvc"
)

// agentDNSFlags configure the node's cluster DNS server (docs/services.md, "Names").
type agentDNSFlags struct {
	addr      string
	upstreams []string
	domain    string
	proxy     string
}

func (f *agentDNSFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "dns-addr", agent.DNSAuto, "where the node's cluster DNS server listens (UDP and TCP): auto (port 53 of --ip), HOST:PORT, or off")
	fl.StringSliceVar(&f.upstreams, "dns-upstream", nil, "resolvers, HOST:PORT, that other names are forwarded to (default: those of /etc/resolv.conf)")
	fl.StringVar(&f.domain, "cluster-domain", agent.DefaultClusterDomain, "the domain of the services' names")
	fl.StringVar(&f.proxy, "service-proxy", "auto", "forward the services' virtual IPs with nftables: auto (as root, on a kernel with nf_tables, with the DNS server on), on or off")
}

// apply puts the flags (or the config file's keys) into cfg. When --service-proxy auto
// leaves the proxy off, it returns why.
func (f *agentDNSFlags) apply(cfg *agent.Config, file *agentFile, changed func(string) bool) (proxyOff string, err error) {
	addr, domain, ups := f.addr, f.domain, f.upstreams
	if !changed("dns-addr") && file.DNSAddr != "" {
		addr = file.DNSAddr
	}
	if !changed("cluster-domain") && file.ClusterDomain != "" {
		domain = file.ClusterDomain
	}
	if !changed("dns-upstream") && len(file.DNSUpstream) > 0 {
		ups = file.DNSUpstream
	}
	switch addr {
	case "off", "":
		addr = ""
	case agent.DNSAuto:
	default:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", fmt.Errorf("--dns-addr %q: give HOST:PORT, auto or off", addr)
		}
	}
	for _, u := range ups {
		if _, _, err := net.SplitHostPort(u); err != nil {
			return "", fmt.Errorf("--dns-upstream %q: give HOST:PORT", u)
		}
	}
	if d := strings.Trim(domain, "."); d == "" || strings.ContainsAny(d, " /:") {
		return "", fmt.Errorf("--cluster-domain %q: give a domain such as %s", domain, agent.DefaultClusterDomain)
	}
	cfg.DNSAddr, cfg.DNSUpstreams, cfg.ClusterDomain = addr, ups, strings.Trim(domain, ".")
	proxy := f.proxy
	if !changed("service-proxy") && file.ServiceProxy != "" {
		proxy = file.ServiceProxy
	}
	switch proxy {
	case "auto":
		cfg.ServiceProxy, proxyOff = serviceProxyAuto(addr)
	case "on":
		if addr == "" {
			return "", fmt.Errorf("--service-proxy on needs the cluster DNS server (--dns-addr): it follows the same services")
		}
		if err := netsvc.NFTablesUsable(); err != nil {
			return "", fmt.Errorf("--service-proxy on: %w", err)
		}
		cfg.ServiceProxy = true
	case "off":
	default:
		return "", fmt.Errorf("--service-proxy %q: use auto, on or off", proxy)
	}
	return proxyOff, nil
}

// serviceProxyAuto is --service-proxy auto with the DNS server at dnsAddr ("" for none):
// on as root, on a kernel with nf_tables, with the DNS server on; else off, and why.
func serviceProxyAuto(dnsAddr string) (bool, string) {
	if dnsAddr == "" {
		return false, "the cluster DNS server is off (--dns-addr off), and the proxy follows its catalog"
	}
	if os.Geteuid() != 0 {
		return false, "not running as root (nftables needs CAP_NET_ADMIN)"
	}
	if err := netsvc.NFTablesUsable(); err != nil {
		return false, err.Error()
	}
	return true, ""
}
