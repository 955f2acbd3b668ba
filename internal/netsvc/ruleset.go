package netsvc

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
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

// forward is one VIP:port of a service and the rule that picks its instance: the
// element of the services map and its chain's only rule.
type forward struct {
	key  string // "VIP . proto . port", the map element's key
	rule string
}

// forwards lists the VIP:ports to forward, in a stable order: each service port of a
// service with an IPv4 VIP and ready IPv4 instances. The rule picks an instance with
// numgen (round robin) or jhash of the client's address (source) and translates the
// destination to where the instance has the port.
func forwards(services []ServiceView) []forward {
	var out []forward
	seen := map[string]bool{}
	for _, sv := range services {
		if sv.Endpoints == nil || sv.Endpoints.VIP == "" {
			continue
		}
		vip, err := netip.ParseAddr(sv.Endpoints.VIP)
		if err != nil || !vip.Is4() {
			continue
		}
		hash := "numgen inc"
		if sv.Service.Balance() == v4.BalanceSource { // leastconn: round robin (docs/services.md)
			hash = "jhash ip saddr"
		}
		for _, sp := range sv.Service.Spec.Ports {
			if sp.ServicePort < 1 || sp.ServicePort > 65535 {
				continue
			}
			backends := backendsOf(sv.Endpoints, sp.Name)
			key := fmt.Sprintf("%s . %s . %d", vip, l4proto(sp.Protocol), sp.ServicePort)
			if len(backends) == 0 || seen[key] {
				continue
			}
			seen[key] = true
			var b strings.Builder
			fmt.Fprintf(&b, "meta l4proto %s meta mark set %s dnat ip addr . port to %s mod %d map { ",
				l4proto(sp.Protocol), proxyMark, hash, len(backends))
			for i, be := range backends {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%d : %s", i, be)
			}
			b.WriteString(" }")
			out = append(out, forward{key: key, rule: b.String()})
		}
	}
	return out
}

// tableState is what the proxy last wrote: each forwarded key's chain and rule.
type tableState struct {
	chains map[string]string // key -> chain name
	rules  map[string]string // key -> rule
	next   int               // the number of the next new chain
}

// renderFull writes the whole table for fws and the state it leaves: one transaction
// that replaces the table (add, delete, define), so the kernel switches from the old
// rules to the new at once. Each VIP:port is an element of one verdict map, found in one
// lookup whatever the number of services, that goes to its chain.
func renderFull(fws []forward) (string, *tableState) {
	st := &tableState{chains: map[string]string{}, rules: map[string]string{}}
	var b, elems strings.Builder
	fmt.Fprintf(&b, "add table ip %s\ndelete table ip %s\ntable ip %s {\n", TableName, TableName, TableName)
	for _, fw := range fws {
		chain := st.chainFor(fw.key)
		st.rules[fw.key] = fw.rule
		fmt.Fprintf(&b, "  chain %s {\n    %s\n  }\n", chain, fw.rule)
		if elems.Len() > 0 {
			elems.WriteString(",\n      ")
		}
		fmt.Fprintf(&elems, "%s : goto %s", fw.key, chain)
	}
	b.WriteString("  map services {\n    type ipv4_addr . inet_proto . inet_service : verdict\n")
	if elems.Len() > 0 {
		fmt.Fprintf(&b, "    elements = {\n      %s\n    }\n", elems.String())
	}
	b.WriteString("  }\n")
	for _, hook := range []string{"prerouting", "output"} {
		fmt.Fprintf(&b, "  chain %s {\n    type nat hook %s priority -100; policy accept;\n    ip daddr . meta l4proto . th dport vmap @services\n  }\n", hook, hook)
	}
	fmt.Fprintf(&b, "  chain postrouting {\n    type nat hook postrouting priority 100; policy accept;\n    meta mark %s masquerade\n  }\n}\n", proxyMark)
	return b.String(), st
}

// chainFor names key's chain, a new one for a new key.
func (st *tableState) chainFor(key string) string {
	if c, ok := st.chains[key]; ok {
		return c
	}
	c := "svc_" + strconv.Itoa(st.next)
	st.next++
	st.chains[key] = c
	return c
}

// renderDelta writes, as one transaction, what changes the table from st to fws: the
// chains of the VIP:ports that went, changed or came, and their map elements; nothing
// of the others. So a change costs what changed, not the size of the cluster. It
// returns "" when nothing changed. st becomes the new state.
func renderDelta(st *tableState, fws []forward) string {
	var b strings.Builder
	want := make(map[string]string, len(fws))
	for _, fw := range fws {
		want[fw.key] = fw.rule
	}
	for _, key := range slices.Sorted(maps.Keys(st.rules)) {
		if _, ok := want[key]; ok {
			continue
		}
		chain := st.chains[key]
		fmt.Fprintf(&b, "delete element ip %s services { %s }\nflush chain ip %s %s\ndelete chain ip %s %s\n",
			TableName, key, TableName, chain, TableName, chain)
		delete(st.rules, key)
		delete(st.chains, key)
	}
	for _, fw := range fws {
		old, had := st.rules[fw.key]
		if had && old == fw.rule {
			continue
		}
		chain := st.chainFor(fw.key)
		if had {
			fmt.Fprintf(&b, "flush chain ip %s %s\n", TableName, chain)
		} else {
			fmt.Fprintf(&b, "add chain ip %s %s\n", TableName, chain)
		}
		fmt.Fprintf(&b, "add rule ip %s %s %s\n", TableName, chain, fw.rule)
		if !had {
			fmt.Fprintf(&b, "add element ip %s services { %s : goto %s }\n", TableName, fw.key, chain)
		}
		st.rules[fw.key] = fw.rule
	}
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
