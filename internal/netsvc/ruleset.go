package netsvc

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// TableName is the nftables table (family ip) the service proxy owns on every node.
const TableName = "berth"

// proxyMark marks the packets the proxy sent to an instance, so they leave with the
// node's address (masquerade): an instance answering a client on its own bridge would
// otherwise answer it directly, past the translation.
const proxyMark = "0x62657274" // "bert"

// BalanceLabel is BCS's service label choosing how connections are spread:
// roundrobin (default) or source (by client address); others fall back to roundrobin.
const BalanceLabel = "BCSBALANCE"

// renderRuleset writes the whole nftables table of the service proxy for services:
// one transaction that replaces the table (add, delete, define), so the kernel switches
// from the old rules to the new at once and a change of 10,000 endpoints is one update.
// Each VIP:port of a service with ready instances is an element of one verdict map,
// found in one lookup whatever the number of services, that jumps to its chain; the
// chain picks an instance with numgen (round robin) or jhash of the client's address
// (source) and translates the destination. Services without a VIP or without ready IPv4
// instances get no element.
func renderRuleset(services []ServiceView) string {
	var b, elems strings.Builder
	fmt.Fprintf(&b, "add table ip %s\ndelete table ip %s\ntable ip %s {\n", TableName, TableName, TableName)
	n := 0
	for _, sv := range services {
		if sv.Endpoints == nil || sv.Endpoints.VIP == "" {
			continue
		}
		vip, err := netip.ParseAddr(sv.Endpoints.VIP)
		if err != nil || !vip.Is4() {
			continue
		}
		hash := "numgen inc"
		if strings.EqualFold(sv.Service.Metadata.Labels[BalanceLabel], "source") {
			hash = "jhash ip saddr"
		}
		for _, sp := range sv.Service.Spec.Ports {
			if sp.ServicePort < 1 || sp.ServicePort > 65535 {
				continue
			}
			backends := backendsOf(sv.Endpoints, sp.Name)
			if len(backends) == 0 {
				continue
			}
			chain := "svc_" + strconv.Itoa(n)
			n++
			fmt.Fprintf(&b, "  chain %s {\n    meta l4proto %s meta mark set %s dnat ip addr . port to %s mod %d map { ",
				chain, l4proto(sp.Protocol), proxyMark, hash, len(backends))
			for i, be := range backends {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%d : %s", i, be)
			}
			b.WriteString(" }\n  }\n")
			if elems.Len() > 0 {
				elems.WriteString(",\n      ")
			}
			fmt.Fprintf(&elems, "%s . %s . %d : goto %s", vip, l4proto(sp.Protocol), sp.ServicePort, chain)
		}
	}
	b.WriteString("  map services {\n    type ipv4_addr . inet_proto . inet_service : verdict\n")
	if elems.Len() > 0 {
		fmt.Fprintf(&b, "    elements = {\n      %s\n    }\n", elems.String())
	}
	b.WriteString("  }\n")
	for _, hook := range []struct{ name, hook string }{{"prerouting", "prerouting"}, {"output", "output"}} {
		fmt.Fprintf(&b, "  chain %s {\n    type nat hook %s priority -100; policy accept;\n    ip daddr . meta l4proto . th dport vmap @services\n  }\n", hook.name, hook.hook)
	}
	fmt.Fprintf(&b, "  chain postrouting {\n    type nat hook postrouting priority 100; policy accept;\n    meta mark %s masquerade\n  }\n}\n", proxyMark)
	return b.String()
}

// backendsOf lists "ip . port" of the ready instances for service port name (IPv4 only:
// the table is of family ip).
func backendsOf(ep *v4.Endpoints, name string) []string {
	var out []string
	for _, e := range ep.Endpoints {
		for _, p := range e.Ports {
			if p.Name != name || p.Port < 1 || p.Port > 65535 {
				continue
			}
			if a, err := netip.ParseAddr(p.IP); err == nil && a.Is4() {
				out = append(out, a.String()+" . "+strconv.Itoa(p.Port))
			}
		}
	}
	return out
}

// l4proto is the transport protocol of a service port: udp, else tcp.
func l4proto(p string) string {
	if strings.EqualFold(p, "udp") {
		return "udp"
	}
	return "tcp"
}
