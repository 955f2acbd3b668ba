package netsvc

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The proxy writes its table over netlink (google/nftables), one transaction per
// update: no nft process, and nothing read back from the kernel, so an update costs
// what it changes (docs/benchmarks.md, "Service proxy").

const (
	// elementsPerMessage bounds the elements of one netlink message, whose element
	// list is one attribute of at most 64 KiB (an element here is under 64 bytes).
	elementsPerMessage = 512
	// batchBuffer is the send buffer forced on the socket: a transaction is one
	// message to the kernel, which the send buffer caps (about 70 bytes an element, so
	// some 900,000 elements).
	batchBuffer = 64 << 20
	// ackBuffer is the receive buffer forced for the kernel's answers, one per message.
	ackBuffer = 8 << 20
	// transactionTimeout bounds the wait for the kernel's answers.
	transactionTimeout = 30 * time.Second
)

var (
	servicesKeyType  = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	backendsKeyType  = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService, nftables.TypeMark)
	backendsDataType = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)
	markBytes        = binary.NativeEndian.AppendUint32(nil, proxyMark)
)

// Registers: NFT_REG_1 is the 32-bit registers 8 to 11 together, where a concatenated
// key is assembled field after field.
const (
	regKey    = 1  // a key's first field (VIP), and a lookup's result (address)
	regField2 = 9  // protocol or port; the translated port
	regField3 = 10 // port or slot
	regSource = 11 // the client's address, hashed into the slot
)

// nftTable is the proxy's table in one network namespace.
type nftTable struct {
	netns string // a network namespace's file (/run/netns/NAME); "" for this process's
	name  string // the table's name; "" for TableName
}

// tableName is the table's name.
func (n nftTable) tableName() string {
	if n.name == "" {
		return TableName
	}
	return n.name
}

// table is the proxy's table, as netlink names it.
func (n nftTable) table() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyIPv4, Name: n.tableName()}
}

// apply sends what fill queues as one transaction.
func (n nftTable) apply(fill func(c *nftables.Conn, t *nftables.Table) error) error {
	c, closeNS, err := connIn(n.netns, prepareSocket)
	if err != nil {
		return err
	}
	defer closeNS()
	if err := fill(c, n.table()); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables transaction on table ip %s: %w", n.tableName(), err)
	}
	return nil
}

// connIn opens a netlink connection to nftables in network namespace netns ("" for
// this process's), its socket prepared by prepare; the returned func closes the
// namespace's file.
func connIn(netns string, prepare func(*netlink.Conn) error) (*nftables.Conn, func(), error) {
	opts := []nftables.ConnOption{nftables.WithSockOptions(prepare)}
	closeNS := func() {}
	if netns != "" {
		f, err := os.Open(netns)
		if err != nil {
			return nil, nil, fmt.Errorf("network namespace: %w", err)
		}
		closeNS = func() { f.Close() }
		opts = append(opts, nftables.WithNetNSFd(int(f.Fd())))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		closeNS()
		return nil, nil, fmt.Errorf("nftables: %w", err)
	}
	return c, closeNS, nil
}

// prepareSocket sizes the socket's buffers for a large transaction and bounds the
// wait for the kernel's answers.
func prepareSocket(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, batchBuffer)
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, ackBuffer)
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("netlink socket buffers: %w", serr)
	}
	return c.SetDeadline(time.Now().Add(transactionTimeout))
}

// writeFull replaces the table with st in one transaction (add, delete, define), so the
// kernel switches from the old rules to the new at once.
func (n nftTable) writeFull(st *tableState) error {
	return n.apply(func(c *nftables.Conn, t *nftables.Table) error {
		c.AddTable(t)
		c.DelTable(t)
		c.AddTable(t)
		sets := map[string]*nftables.Set{}
		for _, p := range protocols {
			s := &nftables.Set{Table: t, Name: backendsMap(p.name), IsMap: true, KeyType: backendsKeyType, DataType: backendsDataType}
			if err := c.AddSet(s, nil); err != nil {
				return fmt.Errorf("map %s: %w", s.Name, err)
			}
			sets[s.Name] = s
		}
		for _, name := range []string{servicesMap, noEndpointsMap} {
			s := &nftables.Set{Table: t, Name: name, IsMap: true, KeyType: servicesKeyType, DataType: nftables.TypeVerdict}
			if err := c.AddSet(s, nil); err != nil {
				return fmt.Errorf("map %s: %w", s.Name, err)
			}
			sets[name] = s
		}
		svc := sets[servicesMap]
		addRejectChains(c, t, sets[noEndpointsMap])
		for chain := range st.chains {
			if err := addDispatchChain(c, t, sets, chain); err != nil {
				return err
			}
		}
		// The verdict maps' elements go to the chains, which must be there first.
		for _, name := range mapNames() {
			if err := changeElements(c, sets[name], st.maps[name]); err != nil {
				return err
			}
		}
		accept := nftables.ChainPolicyAccept
		for _, hook := range []struct {
			name string
			num  *nftables.ChainHook
		}{{"prerouting", nftables.ChainHookPrerouting}, {"output", nftables.ChainHookOutput}} {
			ch := c.AddChain(&nftables.Chain{Table: t, Name: hook.name, Type: nftables.ChainTypeNAT,
				Hooknum: hook.num, Priority: nftables.ChainPriorityNATDest, Policy: &accept})
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
				&expr.Payload{DestRegister: regKey, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: regField2},
				&expr.Payload{DestRegister: regField3, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Lookup{SourceRegister: regKey, DestRegister: 0, IsDestRegSet: true, SetName: svc.Name, SetID: svc.ID},
			}})
		}
		post := c.AddChain(&nftables.Chain{Table: t, Name: "postrouting", Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource, Policy: &accept})
		c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyMARK, Register: regKey},
			&expr.Cmp{Op: expr.CmpOpEq, Register: regKey, Data: markBytes},
			&expr.Masq{},
		}})
		return nil
	})
}

// writeChange applies ch in one transaction: new dispatch chains, then the elements
// that go (from the services map first, so that no VIP:port is sent to slots that are
// not there), the elements that come (into the services map last), and the chains left
// unused.
func (n nftTable) writeChange(ch *tableChange) error {
	return n.apply(func(c *nftables.Conn, t *nftables.Table) error {
		sets := map[string]*nftables.Set{}
		for _, name := range mapNames() {
			sets[name] = &nftables.Set{Table: t, Name: name, IsMap: true}
		}
		for _, chain := range ch.addChains {
			if err := addDispatchChain(c, t, sets, chain); err != nil {
				return err
			}
		}
		names := mapNames()
		for _, name := range names {
			if err := deleteElements(c, sets[name], ch.deletes[name]); err != nil {
				return err
			}
		}
		for i := len(names) - 1; i >= 0; i-- {
			if err := changeElements(c, sets[names[i]], ch.adds[names[i]]); err != nil {
				return err
			}
		}
		for _, name := range ch.delChains {
			chain := &nftables.Chain{Table: t, Name: name}
			c.FlushChain(chain)
			c.DelChain(chain)
		}
		return nil
	})
}

// addDispatchChain queues chain and its one rule: pick a slot, look VIP . port . slot up
// in the protocol's backends map, mark the packet and translate its destination.
func addDispatchChain(c *nftables.Conn, t *nftables.Table, sets map[string]*nftables.Set, chain string) error {
	proto, bySource, n, err := parseDispatchChain(chain)
	if err != nil {
		return err
	}
	backends, ok := sets[backendsMap(proto)]
	if !ok {
		return fmt.Errorf("dispatch chain %s: no map for protocol %q", chain, proto)
	}
	exprs := []expr.Any{
		&expr.Immediate{Register: regKey, Data: markBytes},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: regKey},
		&expr.Payload{DestRegister: regKey, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Payload{DestRegister: regField2, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
	if bySource {
		exprs = append(exprs,
			&expr.Payload{DestRegister: regSource, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Hash{SourceRegister: regSource, DestRegister: regField3, Length: 4, Modulus: n, Type: expr.HashTypeJenkins})
	} else {
		exprs = append(exprs, &expr.Numgen{Register: regField3, Modulus: n, Type: unix.NFT_NG_RANDOM})
	}
	exprs = append(exprs,
		&expr.Lookup{SourceRegister: regKey, DestRegister: regKey, IsDestRegSet: true, SetName: backends.Name, SetID: backends.ID},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: regKey, RegProtoMin: regField2})
	ch := c.AddChain(&nftables.Chain{Table: t, Name: chain})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs})
	return nil
}

// addRejectChains queues the reject chain and the filter chains that send to it: on the
// input, forward (a container's packets) and output (the node's processes') hooks, before
// the NAT (-110, as kube-proxy), a connection's first packet whose VIP . protocol . port
// is in noEndpoints goes to the reject chain, which answers a TCP reset, else an ICMP
// port unreachable. Only the first packet: an established connection keeps its
// translation when its service loses its last instance.
func addRejectChains(c *nftables.Conn, t *nftables.Table, noEndpoints *nftables.Set) {
	reject := c.AddChain(&nftables.Chain{Table: t, Name: rejectChain})
	c.AddRule(&nftables.Rule{Table: t, Chain: reject, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: regKey},
		&expr.Cmp{Op: expr.CmpOpEq, Register: regKey, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Reject{Type: unix.NFT_REJECT_TCP_RST},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: reject, Exprs: []expr.Any{
		&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: icmpPortUnreachable},
	}})
	accept := nftables.ChainPolicyAccept
	for _, hook := range []struct {
		name string
		num  *nftables.ChainHook
	}{{"filter_input", nftables.ChainHookInput}, {"filter_forward", nftables.ChainHookForward}, {"filter_output", nftables.ChainHookOutput}} {
		ch := c.AddChain(&nftables.Chain{Table: t, Name: hook.name, Type: nftables.ChainTypeFilter,
			Hooknum: hook.num, Priority: nftables.ChainPriorityRef(-110), Policy: &accept})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
			&expr.Ct{Key: expr.CtKeySTATE, Register: regKey},
			&expr.Bitwise{SourceRegister: regKey, DestRegister: regKey, Len: 4,
				Mask: binary.NativeEndian.AppendUint32(nil, expr.CtStateBitNEW), Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: regKey, Data: make([]byte, 4)},
			&expr.Payload{DestRegister: regKey, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: regField2},
			&expr.Payload{DestRegister: regField3, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Lookup{SourceRegister: regKey, DestRegister: 0, IsDestRegSet: true, SetName: noEndpoints.Name, SetID: noEndpoints.ID},
		}})
	}
}

// icmpPortUnreachable is ICMP's "port unreachable" code, what a closed UDP port answers.
const icmpPortUnreachable = 3

// changeElements queues elems (key -> value; a chain to go to in the services map)
// into s, elementsPerMessage a message.
func changeElements(c *nftables.Conn, s *nftables.Set, elems map[string]string) error {
	batch := make([]nftables.SetElement, 0, min(len(elems), elementsPerMessage))
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := c.SetAddElements(s, batch)
		batch = batch[:0]
		return err
	}
	for k, v := range elems {
		e := nftables.SetElement{Key: []byte(k)}
		if isVerdictMap(s.Name) {
			e.VerdictData = &expr.Verdict{Kind: expr.VerdictGoto, Chain: v}
		} else {
			e.Val = []byte(v)
		}
		batch = append(batch, e)
		if len(batch) == elementsPerMessage {
			if err := flush(); err != nil {
				return fmt.Errorf("elements of map %s: %w", s.Name, err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("elements of map %s: %w", s.Name, err)
	}
	return nil
}

// deleteElements queues the deletion of keys from s, elementsPerMessage a message.
func deleteElements(c *nftables.Conn, s *nftables.Set, keys []string) error {
	for start := 0; start < len(keys); start += elementsPerMessage {
		chunk := keys[start:min(start+elementsPerMessage, len(keys))]
		elems := make([]nftables.SetElement, len(chunk))
		for i, k := range chunk {
			elems[i] = nftables.SetElement{Key: []byte(k)}
		}
		if err := c.SetDeleteElements(s, elems); err != nil {
			return fmt.Errorf("delete elements of map %s: %w", s.Name, err)
		}
	}
	return nil
}

// removeTable deletes the table in one transaction; a table that is not there is no
// error (it is added first).
func (n nftTable) removeTable() error {
	return n.apply(func(c *nftables.Conn, t *nftables.Table) error {
		c.AddTable(t)
		c.DelTable(t)
		return nil
	})
}

// OtherTables lists the tables of other berth clusters' proxies in network namespace
// netns ("" for this process's): family ip, named TableName or TableName_*, other than own. Where their VIPs
// are the same as this cluster's, the table whose chains were added first translates
// the connection (the kernel's NAT binds once), so the clusters need ranges apart.
func OtherTables(netns, own string) ([]string, error) {
	c, closeNS, err := connIn(netns, func(c *netlink.Conn) error {
		return c.SetDeadline(time.Now().Add(5 * time.Second))
	})
	if err != nil {
		return nil, err
	}
	defer closeNS()
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("nftables: list tables: %w", err)
	}
	var out []string
	for _, t := range tables {
		if t.Name != own && (t.Name == TableName || strings.HasPrefix(t.Name, TableName+"_")) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// NFTablesUsable reports why this process cannot write nftables tables (not root, a
// kernel without nf_tables), or nil when it can: it lists the tables.
func NFTablesUsable() error {
	c, err := nftables.New(nftables.WithSockOptions(func(c *netlink.Conn) error {
		return c.SetDeadline(time.Now().Add(5 * time.Second))
	}))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if _, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4); err != nil {
		return fmt.Errorf("nftables (as root, on a kernel with nf_tables): %w", err)
	}
	return nil
}
