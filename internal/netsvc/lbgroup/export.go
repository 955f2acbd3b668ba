package lbgroup

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/netsvc"
)

// ExportService is one service as a load-balancer group sees it (BCS's exportservice):
// its ports with their routing and the ready instances behind each.
type ExportService struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Balance   string       `json:"balance"`
	MaxConn   int          `json:"maxconn"`
	Ports     []ExportPort `json:"ports"`
}

// ExportPort is one port of an exported service. An HTTP port is routed by VHost and
// Path on the group's HTTP port; the others listen on ServicePort.
type ExportPort struct {
	Name        string    `json:"name"`
	Protocol    string    `json:"protocol"` // "http" or "tcp"
	ServicePort int       `json:"servicePort"`
	VHost       string    `json:"vhost,omitempty"`
	Path        string    `json:"path,omitempty"`
	Backends    []Backend `json:"backends"`
}

// Backend is one ready instance behind a port.
type Backend struct {
	IP       string `json:"ip"`
	Port     int    `json:"port"`
	Weight   int    `json:"weight"`
	Instance string `json:"instance"` // the task group
}

// Export returns the services of views exported to group, ordered by namespace and
// name, with their ready instances. UDP ports are left out: HAProxy forwards TCP only.
func Export(views []netsvc.ServiceView, group string) []ExportService {
	var out []ExportService
	for _, sv := range views {
		svc := sv.Service
		if svc == nil || !svc.InLBGroup(group) {
			continue
		}
		es := ExportService{Namespace: svc.Metadata.Namespace, Name: svc.Metadata.Name,
			Balance: svc.Balance(), MaxConn: svc.MaxConn()}
		for _, sp := range svc.Spec.Ports {
			if strings.EqualFold(sp.Protocol, "udp") {
				continue
			}
			ep := ExportPort{Name: sp.Name, Protocol: "tcp", ServicePort: sp.ServicePort}
			if sp.IsHTTP() {
				ep.Protocol, ep.VHost, ep.Path = "http", strings.ToLower(sp.DomainName), sp.Path
			}
			ep.Backends = backends(svc, sv.Endpoints, sp.Name)
			es.Ports = append(es.Ports, ep)
		}
		out = append(out, es)
	}
	return out
}

// backends lists the ready instances of port name in a stable order.
func backends(svc *v4.Service, eps *v4.Endpoints, name string) []Backend {
	if eps == nil {
		return nil
	}
	var out []Backend
	for _, e := range eps.Endpoints {
		for _, p := range e.Ports {
			a, err := netip.ParseAddr(p.IP)
			if p.Name != name || err != nil || p.Port < 1 || p.Port > 65535 {
				continue
			}
			out = append(out, Backend{IP: a.Unmap().String(), Port: p.Port,
				Weight: svc.Weight(e.Target.Name), Instance: e.Target.ID})
		}
	}
	slices.SortFunc(out, func(a, b Backend) int {
		return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(a.Port, b.Port))
	})
	return slices.CompactFunc(out, func(a, b Backend) bool { return a.IP == b.IP && a.Port == b.Port })
}
