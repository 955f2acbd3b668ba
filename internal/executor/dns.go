package executor

import (
	"net"

	"github.com/berthhq/berth/internal/driver"
)

// containerDNS is the resolver configuration of the pod's containers: the node's cluster
// DNS server, and search domains that make a service of the pod's namespace resolve by
// its name alone, and any other by SVC.NS (docs/services.md, "Names"). ndots:5, as
// Kubernetes: a name of fewer than 5 dots (web, web.demo, web.demo.svc) goes through the
// search list first, so it reaches the service's full name and its VIP, not BCS's short
// form. A resolver file names no port, so only a server on port 53 can be given; nil
// leaves Docker's default.
func (p *pod) containerDNS() *driver.DNS {
	d := p.e.cfg.DNS
	if d == nil {
		return nil
	}
	host, port, err := net.SplitHostPort(d.Addr)
	if err != nil || port != "53" {
		return nil
	}
	return &driver.DNS{
		Servers: []string{host},
		Search:  []string{p.ns + ".svc." + d.Domain, "svc." + d.Domain, d.Domain},
		Options: []string{"ndots:5"},
	}
}
