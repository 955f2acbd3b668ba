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

// TableName is the nftables table (family ip) of a service proxy given none, and the
// start of the name of each cluster's (ClusterTable).
const TableName = "berth"

// ClusterTable names the table of the cluster whose tag is tag (driver.Owner.Tag):
// agents of several clusters on one machine (two berth dev, a dev beside a node of
// another cluster) each write and remove only their own.
func ClusterTable(tag string) string {
	if tag == "" {
		return TableName
	}
	return TableName + "_" + tag
}

// proxyMark marks the packets the proxy sent to an instance, so they leave with the
// node's address (masquerade): an instance answering a client on its own bridge would
// otherwise answer it directly, past the translation.
const proxyMark = 0x62657274 // "bert"

// The table holds no object per service, so that its size costs nothing to change: a
// verdict map ("services") sends each VIP . protocol . port to the dispatch chain for
// its protocol, its number of instances N and its balancing, whose one rule picks a
// slot 0..N-1 (numgen at random, or jhash of the client's address) and translates
// the destination to what the protocol's backends map holds for VIP . port . slot.
// Every change of a service is then a change of map elements, written as one
// transaction (nftables.go).
const servicesMap = "services"

// A VIP:port whose service has no ready instance is refused at once, as kube-proxy's
// nftables mode does, rather than sent on untranslated (its client would wait for a
// timeout): the verdict map no_endpoints sends VIP . protocol . port to the reject chain
// (a TCP reset, an ICMP port unreachable for UDP), from filter chains that run before
// the NAT, on a connection's first packet only. Established connections keep their
// translation when the last instance leaves.
const (
	noEndpointsMap = "no_endpoints"
	rejectChain    = "reject"
)

// protocols are the transport protocols forwarded, each with its backends map, by
// their IP protocol numbers.
var protocols = []struct {
	name   string
	number byte
}{{"tcp", 6}, {"udp", 17}}

// backendsMap names the map of protocol proto's instances.
func backendsMap(proto string) string { return "backends_" + proto }

// forward is one VIP:port of a service: its key in the services map, the dispatch
// chain that picks its instance, and where its instances have the port, by slot, in
// its protocol's backends map under VIP . port . slot; without backends, the VIP:port
// is refused (its key goes to the no_endpoints map). Keys and values are as the kernel
// holds them (elements.go).
type forward struct {
	key      string // servicesKey
	proto    string
	vipPort  string // the VIP . port part of the backends keys
	chain    string
	backends []string // backendValue, by slot
}

// dispatchChain names the chain that picks one of n slots for protocol proto:
// PROTO_rand_N at random, PROTO_hash_N by the client's address. (Not round robin:
// services with the same N share a chain, and a counter shared by services that a
// client calls in turn would send each of them to the same slot every time.)
func dispatchChain(proto string, bySource bool, n int) string {
	if bySource {
		return proto + "_hash_" + strconv.Itoa(n)
	}
	return proto + "_rand_" + strconv.Itoa(n)
}

// parseDispatchChain reads a name that dispatchChain made.
func parseDispatchChain(chain string) (proto string, bySource bool, n uint32, err error) {
	proto, rest, _ := strings.Cut(chain, "_")
	kind, count, _ := strings.Cut(rest, "_")
	v, err := strconv.ParseUint(count, 10, 32)
	if err != nil || v == 0 || (kind != "rand" && kind != "hash") {
		return "", false, 0, fmt.Errorf("not a dispatch chain: %q", chain)
	}
	return proto, kind == "hash", uint32(v), nil
}

// forwards lists the VIP:ports to forward or refuse, in a stable order: each service
// port of a service with an IPv4 VIP, with its ready IPv4 instances (none: refused).
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
		bySource := sv.Service.Balance() == v4.BalanceSource // roundrobin, leastconn: at random (docs/services.md)
		for _, sp := range sv.Service.Spec.Ports {
			if sp.ServicePort < 1 || sp.ServicePort > 65535 {
				continue
			}
			backends := backendsOf(sv.Endpoints, sp.Name)
			proto := l4proto(sp.Protocol)
			port := uint16(sp.ServicePort)
			key := servicesKey(vip, proto, port)
			if seen[key] {
				continue
			}
			seen[key] = true
			fw := forward{key: key, proto: proto, vipPort: vipPortKey(vip, port), chain: rejectChain, backends: backends}
			if len(backends) > 0 {
				fw.chain = dispatchChain(proto, bySource, len(backends))
			}
			out = append(out, fw)
		}
	}
	return out
}

// tableState is what the proxy last wrote: the elements of each map, by map name, and
// how many VIP:ports each dispatch chain serves.
type tableState struct {
	maps   map[string]map[string]string // map -> key -> value (a chain, in the verdict maps)
	chains map[string]int               // dispatch chain -> VIP:ports sent to it
}

// stateOf is the table that fws make.
func stateOf(fws []forward) *tableState {
	st := &tableState{maps: map[string]map[string]string{servicesMap: {}, noEndpointsMap: {}}, chains: map[string]int{}}
	for _, p := range protocols {
		st.maps[backendsMap(p.name)] = map[string]string{}
	}
	for _, fw := range fws {
		if len(fw.backends) == 0 { // the reject chain is the table's own, not counted
			st.maps[noEndpointsMap][fw.key] = rejectChain
			continue
		}
		st.maps[servicesMap][fw.key] = fw.chain
		st.chains[fw.chain]++
		backends := st.maps[backendsMap(fw.proto)]
		for slot, be := range fw.backends {
			backends[backendKey(fw.vipPort, slot)] = be
		}
	}
	return st
}

// mapNames are the maps of the table, the services map first.
func mapNames() []string {
	names := []string{servicesMap}
	for _, p := range protocols {
		names = append(names, backendsMap(p.name))
	}
	return append(names, noEndpointsMap)
}

// isVerdictMap reports whether map name holds verdicts (a chain to go to) rather than
// addresses.
func isVerdictMap(name string) bool { return name == servicesMap || name == noEndpointsMap }

// tableChange is what changes a table from one state to another: the dispatch chains
// to add, the elements to delete and to add (by map), and the chains left unused.
type tableChange struct {
	addChains []string
	deletes   map[string][]string          // map -> keys
	adds      map[string]map[string]string // map -> key -> value
	delChains []string
}

// empty reports whether the change changes nothing.
func (c *tableChange) empty() bool {
	n := len(c.addChains) + len(c.delChains)
	for _, keys := range c.deletes {
		n += len(keys)
	}
	for _, elems := range c.adds {
		n += len(elems)
	}
	return n == 0
}

// diff is what changes the table from st to fws: the map elements that went, changed
// or came, and the dispatch chains that came or are left unused; nothing of the rest.
// So a change costs what changed, not the size of the cluster. An element whose value
// changes is deleted and added again (adding over a different value is an error). st
// becomes the new state.
func diff(st *tableState, fws []forward) *tableChange {
	want := stateOf(fws)
	ch := &tableChange{deletes: map[string][]string{}, adds: map[string]map[string]string{}}
	for _, chain := range slices.Sorted(maps.Keys(want.chains)) {
		if st.chains[chain] == 0 {
			ch.addChains = append(ch.addChains, chain)
		}
	}
	for _, name := range mapNames() {
		if keys := changedKeys(st.maps[name], want.maps[name]); len(keys) > 0 {
			ch.deletes[name] = keys
		}
		if keys := changedKeys(want.maps[name], st.maps[name]); len(keys) > 0 {
			ch.adds[name] = make(map[string]string, len(keys))
			for _, k := range keys {
				ch.adds[name][k] = want.maps[name][k]
			}
		}
	}
	for _, chain := range slices.Sorted(maps.Keys(st.chains)) {
		if want.chains[chain] == 0 {
			ch.delChains = append(ch.delChains, chain)
		}
	}
	*st = *want
	return ch
}

// changedKeys lists the keys of from that are not in to with the same value, sorted.
func changedKeys(from, to map[string]string) []string {
	var out []string
	for k, v := range from {
		if w, ok := to[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// backendsOf lists where the ready instances have service port name, as backends map
// values (IPv4 only: the table is of family ip).
func backendsOf(ep *v4.Endpoints, name string) []string {
	var out []string
	for _, e := range ep.Endpoints {
		for _, p := range e.Ports {
			if p.Name != name || p.Port < 1 || p.Port > 65535 {
				continue
			}
			if a, err := netip.ParseAddr(p.IP); err == nil && a.Is4() {
				out = append(out, backendValue(netip.AddrPortFrom(a, uint16(p.Port))))
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
