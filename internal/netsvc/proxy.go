package netsvc

import (
	"context"
	"log/slog"
)

// ProxyConfig configures a service proxy.
type ProxyConfig struct {
	// NetNS is the file of the network namespace whose table the proxy writes
	// (/run/netns/NAME); empty for the agent's own (tests use one of their own).
	NetNS string
	// Table is the name of the proxy's table (family ip); "" for TableName. An agent
	// gives its cluster's (ClusterTable).
	Table  string
	Logger *slog.Logger
}

// Proxy forwards every service's VIP:port to its ready instances with the kernel's
// NAT (nftables), on the node it runs on (docs/services.md, "Virtual IPs"). It writes its
// whole table at the start, then, in one transaction at each change of the catalog, the
// map elements that changed: an instance that leaves the endpoints gets no new
// connection from then on (established ones keep their translation). The table
// outlives the agent, so forwarding goes on while it restarts.
type Proxy struct {
	cat     *Catalog
	changed <-chan struct{}
	table   nftTable
	log     *slog.Logger
	// state is what the last update left in the kernel; nil until a whole table is
	// written (at the start, and after a failed update, since the kernel's table is then
	// not known).
	state *tableState
}

// NewProxy returns a proxy of cat's services; Run drives it.
func NewProxy(cat *Catalog, cfg ProxyConfig) *Proxy {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Proxy{cat: cat, changed: cat.Subscribe(), table: nftTable{netns: cfg.NetNS, name: cfg.Table}, log: cfg.Logger}
}

// Run writes the table once the catalog is first listed, and after every change of the
// catalog, until ctx ends (Follow).
func (p *Proxy) Run(ctx context.Context) {
	Follow(ctx, p.cat, p.changed, nil, "service proxy", p.log, p.Sync)
}

// Sync brings the table in line with the catalog as it is now: the whole table the first
// time (and after a failure), then only what changed, each in one transaction. Run calls
// it; a caller of Sync must not run Run too.
func (p *Proxy) Sync(context.Context) error {
	fws := forwards(p.cat.Services())
	if p.state == nil {
		st := stateOf(fws)
		if err := p.table.writeFull(st); err != nil {
			return err
		}
		p.state = st
		return nil
	}
	change := diff(p.state, fws)
	if change.empty() {
		return nil
	}
	if err := p.table.writeChange(change); err != nil {
		p.state = nil // the next update writes the whole table
		return err
	}
	return nil
}

// RemoveTable deletes the proxy's table table ("" for TableName) in network namespace
// netns ("" for this process's: a node whose proxy is turned off): no VIP is forwarded
// there any more. A table that is not there is no error.
func RemoveTable(netns, table string) error {
	return nftTable{netns: netns, name: table}.removeTable()
}
