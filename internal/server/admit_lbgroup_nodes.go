package server

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// lbNodePortErrors refuses the TCP ports of svc that the nodes of its load-balancer
// groups already use, as far as berth knows them: the node's agent listens on its port,
// the ports its agent reported busy (status.busyPorts) are other programs', the group's
// HTTP port routes HTTP ports by host and path, and the node's port ranges are what
// berth gives to tasks' host ports. HAProxy could not listen on such a port on
// that node; the node would leave it out (netsvc/lbgroup's bindcheck.go), so it is better
// refused here, naming the field. A node's group and HTTP port are the attributes its
// agent registers (v4.LBGroupAttribute); nodes of older agents are not known to serve a
// group, and the node's own check remains for them and for other programs' ports.
func (s *Server) lbNodePortErrors(ctx context.Context, svc *v4.Service, groups []string) (v4.FieldErrors, error) {
	if !slices.ContainsFunc(svc.Spec.Ports, func(sp v4.ServicePort) bool { return lbTCP(sp) }) {
		return nil, nil
	}
	nodes, _, err := s.store.List(ctx, v4.KindNode, "")
	if err != nil {
		return nil, fmt.Errorf("read the nodes of load-balancer groups %s: %w", strings.Join(groups, ", "), err)
	}
	var fe v4.FieldErrors
	for i, sp := range svc.Spec.Ports {
		if !lbTCP(sp) {
			continue
		}
		for _, o := range nodes {
			n, ok := o.(*v4.Node)
			if !ok {
				continue
			}
			group := n.Spec.Attributes.Text[v4.LBGroupAttribute]
			if !slices.Contains(groups, group) {
				continue
			}
			if use := nodePortUse(n, sp.ServicePort); use != "" {
				fe = append(fe, v4.FieldError{Field: fmt.Sprintf("spec.ports[%d].servicePort", i),
					Message: fmt.Sprintf("TCP port %d in load-balancer group %s is %s on node %s; give another service port",
						sp.ServicePort, group, use, n.Metadata.Name)})
				break
			}
		}
	}
	return fe, nil
}

// lbTCP reports whether a service port listens on its own port in a load-balancer group
// (HTTP ports share the group's HTTP port, UDP ports are not balanced).
func lbTCP(sp v4.ServicePort) bool {
	return !strings.EqualFold(sp.Protocol, "udp") && !sp.IsHTTP()
}

// nodePortUse says what port is to a load-balancer group node ("" when berth knows of
// nothing that uses it).
func nodePortUse(n *v4.Node, port int) string {
	if _, p, err := net.SplitHostPort(n.Status.AgentAddress); err == nil && p == strconv.Itoa(port) {
		return "its agent's port"
	}
	for _, b := range n.Status.BusyPorts {
		if b.Port == port && b.Protocol == "tcp" {
			return "busy (" + b.String() + ", as the node's agent reported)"
		}
	}
	if http, ok := n.Spec.Attributes.Scalar[v4.LBHTTPPortAttribute]; ok && int(http) == port {
		return "the group's HTTP port (--lb-http-port), where HTTP ports are routed by host and path,"
	}
	ranges := n.Spec.PortRanges
	if len(ranges) == 0 {
		ranges = []v4.PortRange{v4.DefaultPortRange}
	}
	for _, r := range ranges {
		if port >= r.Begin && port <= r.End {
			return fmt.Sprintf("in the port range %d-%d berth gives to tasks' host ports", r.Begin, r.End)
		}
	}
	return ""
}
