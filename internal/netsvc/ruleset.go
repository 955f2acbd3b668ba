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

// The table holds no object per service, so that its size costs nothing to change: a
// verdict map ("services") sends each VIP . protocol . port to the dispatch chain for
// its protocol, its number of instances N and its balancing, whose one rule picks a
// slot 0..N-1 (numgen round robin, or jhash of the client's address) and translates
// the destination to what the protocol's backends map holds for VIP . port . slot.
// Every change of a service is then a change of map elements, written as one
// transaction. (One backends map per protocol, since nft cannot read back a map typed
// by a port of either protocol.)
const servicesMap = "services"

// protocols are the transport protocols forwarded, each with its backends map.
var protocols = []string{"tcp", "udp"}

// backendsMap names the map of protocol proto's instances.
func backendsMap(proto string) string { return "backends_" + proto }

// forward is one VIP:port of a service: its key in the services map, the dispatch
// chain that picks its instance, and where its instances have the port ("ip . port",
// by slot), keyed by "VIP . port" in its protocol's backends map.
type forward struct {
	key      string
	proto    string
	slotKey  string
	chain    string
	backends []string
}

// dispatchChain names the chain that picks one of n slots for protocol proto:
// PROTO_rr_N round robin, PROTO_sh_N by the client's address.
func dispatchChain(proto string, bySource bool, n int) string {
	if bySource {
		return proto + "_sh_" + strconv.Itoa(n)
	}
	return proto + "_rr_" + strconv.Itoa(n)
}

// dispatchRule is the one rule of a dispatch chain named by dispatchChain.
func dispatchRule(chain string) string {
	proto, rest, _ := strings.Cut(chain, "_")
	kind, n, _ := strings.Cut(rest, "_")
	pick := "numgen inc"
	if kind == "sh" {
		pick = "jhash ip saddr"
	}
	return fmt.Sprintf("meta mark set %s dnat ip addr . port to ip daddr . %s dport . %s mod %s map @%s",
		proxyMark, proto, pick, n, backendsMap(proto))
}

// forwards lists the VIP:ports to forward, in a stable order: each service port of a
// service with an IPv4 VIP and ready IPv4 instances.
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
		bySource := sv.Service.Balance() == v4.BalanceSource // leastconn: round robin (docs/services.md)
		for _, sp := range sv.Service.Spec.Ports {
			if sp.ServicePort < 1 || sp.ServicePort > 65535 {
				continue
			}
			backends := backendsOf(sv.Endpoints, sp.Name)
			proto := l4proto(sp.Protocol)
			key := fmt.Sprintf("%s . %s . %d", vip, proto, sp.ServicePort)
			if len(backends) == 0 || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, forward{key: key, proto: proto, slotKey: fmt.Sprintf("%s . %d", vip, sp.ServicePort),
				chain: dispatchChain(proto, bySource, len(backends)), backends: backends})
		}
	}
	return out
}

// tableState is what the proxy last wrote: the elements of each map, by map name, and
// how many VIP:ports each dispatch chain serves.
type tableState struct {
	maps   map[string]map[string]string // map -> key -> value
	chains map[string]int               // dispatch chain -> VIP:ports sent to it
}

// stateOf is the table that fws make.
func stateOf(fws []forward) *tableState {
	st := &tableState{maps: map[string]map[string]string{servicesMap: {}}, chains: map[string]int{}}
	for _, proto := range protocols {
		st.maps[backendsMap(proto)] = map[string]string{}
	}
	for _, fw := range fws {
		st.maps[servicesMap][fw.key] = fw.chain
		st.chains[fw.chain]++
		backends := st.maps[backendsMap(fw.proto)]
		for slot, be := range fw.backends {
			backends[fw.slotKey+" . "+strconv.Itoa(slot)] = be
		}
	}
	return st
}

// renderFull writes the whole table for fws and the state it leaves: one transaction
// that replaces the table (add, delete, define), so the kernel switches from the old
// rules to the new at once.
func renderFull(fws []forward) (string, *tableState) {
	st := stateOf(fws)
	var b strings.Builder
	fmt.Fprintf(&b, "add table ip %s\ndelete table ip %s\ntable ip %s {\n", TableName, TableName, TableName)
	for _, proto := range protocols {
		name := backendsMap(proto)
		fmt.Fprintf(&b, "  map %s {\n    typeof ip daddr . %s dport . numgen inc mod 1 : ip daddr . %s dport\n", name, proto, proto)
		writeElements(&b, st.maps[name], " : ")
		b.WriteString("  }\n")
	}
	for _, chain := range slices.Sorted(maps.Keys(st.chains)) {
		fmt.Fprintf(&b, "  chain %s {\n    %s\n  }\n", chain, dispatchRule(chain))
	}
	fmt.Fprintf(&b, "  map %s {\n    type ipv4_addr . inet_proto . inet_service : verdict\n", servicesMap)
	writeElements(&b, st.maps[servicesMap], " : goto ")
	b.WriteString("  }\n")
	for _, hook := range []string{"prerouting", "output"} {
		fmt.Fprintf(&b, "  chain %s {\n    type nat hook %s priority -100; policy accept;\n    ip daddr . meta l4proto . th dport vmap @%s\n  }\n", hook, hook, servicesMap)
	}
	fmt.Fprintf(&b, "  chain postrouting {\n    type nat hook postrouting priority 100; policy accept;\n    meta mark %s masquerade\n  }\n}\n", proxyMark)
	return b.String(), st
}

// writeElements writes a map's elements statement, key sep value, nothing for none.
func writeElements(b *strings.Builder, elems map[string]string, sep string) {
	if len(elems) == 0 {
		return
	}
	b.WriteString("    elements = {\n")
	for i, k := range slices.Sorted(maps.Keys(elems)) {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("      " + k + sep + elems[k])
	}
	b.WriteString("\n    }\n")
}

// renderDelta writes, as one transaction, what changes the table from st to fws: the
// map elements that went, changed or came, the dispatch chains that came first and
// those left unused last; nothing of the rest. So a change costs what changed, not
// the size of the cluster. It returns "" when nothing changed. st becomes the new
// state.
func renderDelta(st *tableState, fws []forward) string {
	want := stateOf(fws)
	var b strings.Builder
	for _, chain := range slices.Sorted(maps.Keys(want.chains)) {
		if st.chains[chain] == 0 {
			fmt.Fprintf(&b, "add chain ip %s %s\nadd rule ip %s %s %s\n", TableName, chain, TableName, chain, dispatchRule(chain))
		}
	}
	// An element whose value changes is deleted and added again in the same
	// transaction (adding over a different value is an error); the services map
	// first, so that no VIP:port is sent to slots that are not there.
	names := []string{servicesMap}
	for _, proto := range protocols {
		names = append(names, backendsMap(proto))
	}
	for _, name := range names {
		writeElementChange(&b, "delete", name, gone(st.maps[name], want.maps[name]), nil, "")
	}
	for _, name := range slices.Backward(names) {
		sep := " : "
		if name == servicesMap {
			sep = " : goto "
		}
		writeElementChange(&b, "add", name, gone(want.maps[name], st.maps[name]), want.maps[name], sep)
	}
	for _, chain := range slices.Sorted(maps.Keys(st.chains)) {
		if want.chains[chain] == 0 {
			fmt.Fprintf(&b, "delete chain ip %s %s\n", TableName, chain)
		}
	}
	*st = *want
	return b.String()
}

// gone lists the keys of from that are not in to with the same value, sorted.
func gone(from, to map[string]string) []string {
	var out []string
	for k, v := range from {
		if w, ok := to[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// writeElementChange writes one "add element" or "delete element" statement for keys
// of map name, each with its value from values after sep when values is not nil.
func writeElementChange(b *strings.Builder, verb, name string, keys []string, values map[string]string, sep string) {
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(b, "%s element ip %s %s { ", verb, TableName, name)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		if values != nil {
			b.WriteString(sep + values[k])
		}
	}
	b.WriteString(" }\n")
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
