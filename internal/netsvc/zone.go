package netsvc

import (
	"net"
	"strconv"
	"strings"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// rrset is what one name answers: addresses, and service records for SRV names.
type rrset struct {
	v4, v6 []net.IP
	srv    []srvTarget
	// aliases are the service's clusterIP entries that are names: their addresses are
	// looked up at each query and merged into the answer (bcs-dns did so).
	aliases []string
	// exists is set for a service's own name even when it has no address: the answer is
	// then "no data", not "no such name".
	exists bool
	// bcs is, on the own name of a service with a VIP, BCS's answer (its ready instances
	// and clusterIP entries), which BCS's short forms of the name keep; the name itself
	// answers the VIP alone, as Kubernetes' ClusterIP. nil elsewhere: the short forms
	// answer what the name does.
	bcs *rrset
	// seen holds the addresses added while the set is built, so that a service of
	// 10,000 instances is not built in 10,000² comparisons; nil once built.
	seen map[string]struct{}
}

// srvTarget is one instance of an SRV answer: its own name, its address and port.
type srvTarget struct {
	target string // fully qualified, lower case
	ip     net.IP
	port   uint16
}

// zone holds the names of every service, by fully qualified lower-case name (with the
// trailing dot). A service's names are replaced together when its service or endpoints
// change, so a change costs the size of that service, not of the cluster.
type zone struct {
	domain string // "cluster.local." (lower case, trailing dot)

	mu    sync.RWMutex
	names map[string]*rrset
	owned map[string][]string // service key (ns/name) -> the names it put in names
}

func newZone(domain string) *zone {
	return &zone{domain: domain, names: map[string]*rrset{}, owned: map[string][]string{}}
}

// lookup returns the records of a fully qualified lower-case name.
func (z *zone) lookup(name string) (*rrset, bool) {
	z.mu.RLock()
	defer z.mu.RUnlock()
	rs, ok := z.names[name]
	return rs, ok
}

// set replaces the names of service key with those of svc and ep (svc nil: the service
// is gone, its names too).
func (z *zone) set(key string, svc *v4.Service, ep *v4.Endpoints) {
	var names map[string]*rrset
	if svc != nil {
		names = z.serviceNames(svc, ep)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, n := range z.owned[key] {
		delete(z.names, n)
	}
	delete(z.owned, key)
	if svc == nil {
		return
	}
	owned := make([]string, 0, len(names))
	for n, rs := range names {
		z.names[n] = rs
		owned = append(owned, n)
	}
	z.owned[key] = owned
}

// serviceNames builds every name of one service (docs/services.md, "Names"):
//
//	SVC.NS.svc.DOMAIN               the VIP; without one, the ready instances' addresses
//	                                and the clusterIP entries (BCS's short forms: always these)
//	INDEX-OWNER.SVC.NS.svc.DOMAIN   one instance
//	_PORT._PROTO.SVC.NS.svc.DOMAIN  SRV: each ready instance's name and port
func (z *zone) serviceNames(svc *v4.Service, ep *v4.Endpoints) map[string]*rrset {
	base := strings.ToLower(svc.Metadata.Name + "." + svc.Metadata.Namespace + ".svc." + z.domain)
	own := &rrset{exists: true}
	names := map[string]*rrset{base: own}
	if vip := serviceVIP(svc, ep); vip != nil {
		names[base] = &rrset{exists: true, bcs: own}
		names[base].add(vip)
	}
	for _, s := range svc.Spec.ClusterIP {
		if ip := net.ParseIP(s); ip != nil {
			own.add(ip)
		} else {
			own.aliases = append(own.aliases, fqdn(s))
		}
	}
	srvs := map[string]*rrset{}
	for _, sp := range svc.Spec.Ports {
		n := "_" + strings.ToLower(sp.Name) + "._" + srvProto(sp.Protocol) + "." + base
		srvs[sp.Name] = &rrset{exists: true}
		names[n] = srvs[sp.Name]
	}
	if ep != nil {
		for _, e := range ep.Endpoints {
			ip := endpointIP(e)
			if ip == nil {
				continue
			}
			own.add(ip)
			inst := strings.ToLower(strconv.Itoa(e.Target.Index)+"-"+e.Target.Name) + "." + base
			rs := names[inst]
			if rs == nil { // two owners' instances of one index and name cannot collide
				rs = &rrset{exists: true}
				names[inst] = rs
			}
			rs.add(ip)
			for _, p := range e.Ports {
				if set := srvs[p.Name]; set != nil && p.Port > 0 && p.Port <= 65535 {
					if pip := net.ParseIP(p.IP); pip != nil {
						set.srv = append(set.srv, srvTarget{target: inst, ip: pip, port: uint16(p.Port)})
					}
				}
			}
		}
	}
	for _, rs := range names {
		rs.seen = nil
	}
	own.seen = nil
	return names
}

// serviceVIP is the virtual IP of a service of type ClusterIP whose VIP the leader gave
// (in its endpoints), else nil: a service of type None, or one still waiting for its VIP,
// is known by its instances (Kubernetes' headless services, and BCS's).
func serviceVIP(svc *v4.Service, ep *v4.Endpoints) net.IP {
	if ep == nil || ep.VIP == "" || strings.EqualFold(svc.Spec.Type, "None") {
		return nil
	}
	return net.ParseIP(ep.VIP)
}

// add adds an address once.
func (rs *rrset) add(ip net.IP) {
	if ip == nil {
		return
	}
	if v := ip.To4(); v != nil {
		ip = v
	}
	if _, dup := rs.seen[string(ip)]; dup {
		return
	}
	if rs.seen == nil {
		rs.seen = map[string]struct{}{}
	}
	rs.seen[string(ip)] = struct{}{}
	if len(ip) == net.IPv4len {
		rs.v4 = append(rs.v4, ip)
	} else {
		rs.v6 = append(rs.v6, ip)
	}
}

// endpointIP is the address an instance is reached at: its first port's (the node's
// when the port is on the node), else the pod's.
func endpointIP(e v4.Endpoint) net.IP {
	if len(e.Ports) > 0 {
		return net.ParseIP(e.Ports[0].IP)
	}
	return net.ParseIP(e.ContainerIP)
}

// srvProto is the SRV protocol label of a service port protocol: udp, else tcp (http
// and https run over TCP).
func srvProto(p string) string {
	if strings.EqualFold(p, "udp") {
		return "udp"
	}
	return "tcp"
}
