package cli

import (
	"fmt"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// endpoints writes a service's instances: the ready ones with where each port is
// reached, then those that get no traffic and why.
func (d *describer) endpoints(ep *v4.Endpoints) {
	if ep == nil {
		d.kv("Endpoints", "%s (not computed yet)", none)
		return
	}
	if ep.VIP != "" {
		d.kv("VIP", "%s", ep.VIP)
	}
	if len(ep.Endpoints) == 0 {
		d.kv("Endpoints", "%s", none)
	} else {
		d.section("Endpoints", func() {
			for _, e := range ep.Endpoints {
				d.line(endpointLine(e))
			}
		})
	}
	if len(ep.NotReady) > 0 {
		d.section("Not Ready", func() {
			for _, e := range ep.NotReady {
				d.line(endpointLine(e) + ": " + e.Reason)
			}
		})
	}
}

// endpointLine is "ID on NODE  http=10.0.0.1:31001 ...".
func endpointLine(e v4.Endpoint) string {
	line := fmt.Sprintf("%s on %s", e.Target.ID, orNone(e.Node))
	if ports := endpointPorts(e); ports != "" {
		line += "  " + ports
	}
	return line
}

// endpointPorts renders an endpoint's ports as name=ip:port.
func endpointPorts(e v4.Endpoint) string {
	parts := make([]string, 0, len(e.Ports))
	for _, p := range e.Ports {
		parts = append(parts, p.Name+"="+p.IP+":"+strconv.Itoa(p.Port))
	}
	return strings.Join(parts, " ")
}

// endpointAddresses renders the ready endpoints as their first port's ip:port, up to
// max of them (the `get endpoints` column).
func endpointAddresses(ep *v4.Endpoints, max int) string {
	var parts []string
	for i, e := range ep.Endpoints {
		if i == max {
			parts = append(parts, fmt.Sprintf("+%d more", len(ep.Endpoints)-max))
			break
		}
		if len(e.Ports) > 0 {
			parts = append(parts, e.Ports[0].IP+":"+strconv.Itoa(e.Ports[0].Port))
		} else {
			parts = append(parts, e.ContainerIP)
		}
	}
	return orNone(strings.Join(parts, ","))
}
