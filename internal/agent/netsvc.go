package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/miekg/dns"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/netsvc"
)

// DefaultClusterDomain is the domain of the cluster's service names.
const DefaultClusterDomain = "cluster.local"

// resolvConf is where the node's own resolvers are read from.
const resolvConf = "/etc/resolv.conf"

// startDNS starts the node-local DNS server when the config asks for one
// (docs/services.md, "Names"): it answers for every service of the cluster from the
// agent's catalog, which followCatalog keeps, and forwards the rest to the node's
// resolvers. It returns what the executor tells the tasks, and the server's Close.
func (a *Agent) startDNS() (*executor.DNS, func(), error) {
	if a.cfg.DNSAddr == "" {
		if a.cfg.followsCatalog() {
			a.catalog = netsvc.NewCatalog(a.cfg.ClusterDomain)
		}
		return nil, func() {}, nil
	}
	ups := a.cfg.DNSUpstreams
	if len(ups) == 0 {
		cc, err := dns.ClientConfigFromFile(resolvConf)
		if err != nil {
			a.log.Warn("no upstream resolvers: names outside the cluster will be refused", "file", resolvConf, "err", err)
		} else {
			for _, s := range cc.Servers {
				ups = append(ups, net.JoinHostPort(s, cc.Port))
			}
		}
	}
	a.catalog = netsvc.NewCatalog(a.cfg.ClusterDomain)
	srv, err := netsvc.NewDNSServer(a.catalog, netsvc.DNSConfig{Addr: a.cfg.DNSAddr, Upstreams: ups, Logger: a.log})
	if err != nil && a.cfg.DNSFallback != "" {
		first := err
		srv, err = netsvc.NewDNSServer(a.catalog, netsvc.DNSConfig{Addr: a.cfg.DNSFallback, Upstreams: ups, Logger: a.log})
		if err == nil {
			a.log.Warn("cluster DNS server not on port 53 of the node (taken by another berth dev or a resolver, or not root): it listens on "+srv.Addr()+
				" instead, where processes find it in BERTH_DNS; containers keep Docker's resolver. Free the port, or give --dns-addr HOST:PORT",
				"want", a.cfg.DNSAddr, "addr", srv.Addr(), "err", first)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("agent: the cluster DNS server (--dns-addr %s, or off): %w", a.cfg.DNSAddr, err)
	}
	a.log.Info("cluster DNS server started", "addr", srv.Addr(), "domain", a.cfg.ClusterDomain, "upstreams", ups)
	a.mu.Lock()
	a.dnsAddr = srv.Addr()
	a.mu.Unlock()
	return &executor.DNS{Addr: srv.Addr(), Domain: a.cfg.ClusterDomain}, func() { srv.Close() }, nil
}

// runProxy runs the node's service proxy over the catalog until ctx ends, or removes a
// table an earlier run left when the proxy is off. Its table is its cluster's
// (netsvc.ClusterTable): another cluster's agent on the machine has its own.
func (a *Agent) runProxy(ctx context.Context) {
	if a.cfg.DNSAddr == "" {
		return // no DNS server: no proxy, nothing to clean
	}
	table := a.proxyTableName()
	a.removeLegacyTable()
	if !a.cfg.ServiceProxy {
		if err := netsvc.RemoveTable("", table); err != nil {
			a.log.Debug("service proxy off; no table removed", "table", table, "err", err)
		}
		return
	}
	if other, err := netsvc.OtherTables("", table); err == nil && len(other) > 0 {
		a.log.Warn("other berth clusters' service proxy tables are on this machine: where a VIP is theirs too (the same --service-cidr), the older table's instances answer it. Give each cluster its own --service-cidr, or remove a stopped cluster's table (nft delete table ip NAME)",
			"tables", other)
	}
	a.log.Info("service proxy started", "table", table)
	netsvc.NewProxy(a.catalog, netsvc.ProxyConfig{Table: table, Logger: a.log}).Run(ctx)
	if a.cfg.RemoveProxyTableAtStop {
		if err := netsvc.RemoveTable("", table); err != nil {
			a.log.Warn("service proxy stopped; its table is left", "table", table, "err", err)
		} else {
			a.log.Info("service proxy stopped; its table removed", "table", table)
		}
	}
}

// proxyTableName is the name of this cluster's service proxy table.
func (a *Agent) proxyTableName() string { return netsvc.ClusterTable(a.owner.Tag()) }

// removeLegacyTable removes the table "berth" (netsvc.TableName) when this node's own
// agent wrote it before tables were named by cluster (its checkpoint predates them):
// left in place, its chains, added first, would keep answering this cluster's VIPs
// with the instances of then. Another cluster's (a fresh data dir) is left alone.
func (a *Agent) removeLegacyTable() {
	older, err := a.ckpt.claimProxyTable(a.proxyTableName())
	if err != nil {
		a.log.Warn("checkpoint: the proxy table not recorded", "err", err)
	}
	if !older {
		return
	}
	other, err := netsvc.OtherTables("", a.proxyTableName())
	if err != nil || !slices.Contains(other, netsvc.TableName) {
		return
	}
	if err := netsvc.RemoveTable("", netsvc.TableName); err != nil {
		a.log.Warn("the service proxy table an older berth wrote is left", "table", netsvc.TableName, "err", err)
		return
	}
	a.log.Info("removed the service proxy table an older berth of this node wrote", "table", netsvc.TableName)
}

// ProxyTable is the nftables table (family ip) of the node's service proxy, "" when it
// runs none (valid after Ready).
func (a *Agent) ProxyTable() string {
	if !a.cfg.ServiceProxy || a.DNSAddr() == "" {
		return ""
	}
	return a.proxyTableName()
}

// followCatalog keeps the catalog of services and endpoints current: a list, then one
// watch of both from its revisions, and again from a list after any break. A server out
// of reach leaves the last catalog answering.
func (a *Agent) followCatalog(ctx context.Context) {
	if a.catalog == nil {
		return
	}
	a.watchLoop(ctx, "lost the watch of services; names keep their last answers, reconnecting", a.followOnce)
}

// followOnce lists the catalog and follows its watch until it breaks.
func (a *Agent) followOnce(ctx context.Context) error {
	var cat *client.Catalog
	err := a.servers.do(ctx, func(c *client.Client) error {
		var err error
		cat, err = c.AgentCatalog(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	a.catalog.Replace(v4.KindService, cat.Services.Items)
	a.catalog.Replace(v4.KindEndpoint, cat.Endpoints.Items)
	if a.cfg.OnCatalog != nil {
		for _, o := range append(slices.Clip(cat.Services.Items), cat.Endpoints.Items...) {
			a.cfg.OnCatalog(o)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ch <-chan client.WatchEvent
	err = a.servers.do(ctx, func(c *client.Client) error {
		var err error
		ch, err = c.AgentWatchCatalog(wctx, cat)
		return err
	})
	if err != nil {
		return fmt.Errorf("watch services: %w", err)
	}
	for ev := range ch {
		switch ev.Type {
		case client.EventError:
			return ev.Err
		case client.EventDeleted:
			a.catalog.Delete(ev.Object)
		default:
			if ev.Object != nil {
				a.catalog.Put(ev.Object)
				if a.cfg.OnCatalog != nil {
					a.cfg.OnCatalog(ev.Object)
				}
			}
		}
	}
	return errors.New("the watch ended")
}

// DNSAddr is where the node's cluster DNS server listens ("" when it runs none or has
// not started yet).
func (a *Agent) DNSAddr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dnsAddr
}

// An instance that is a ready endpoint of a service leaves it before it is stopped: the
// agent waits until the node's catalog no longer lists it (the server's service
// controller saw it stop), and a margin for the node's proxy, load-balancer group and
// the other nodes to apply that, at most leaveWait in all (docs/services.md, "Stopping
// instances"). Nomad's shutdown_delay and Kubernetes' preStop sleep do the same by hand.
const (
	leaveWait   = 3 * time.Second
	leaveMargin = 250 * time.Millisecond
	leavePoll   = 20 * time.Millisecond
)

// leaveServices waits until task group ns/name has left the services it was a ready
// endpoint of (see leaveWait).
func (a *Agent) leaveServices(ns, name string) {
	if a.catalog == nil || !a.catalog.Serves(ns, name) {
		return
	}
	start := time.Now()
	deadline := start.Add(leaveWait - leaveMargin)
	for a.catalog.Serves(ns, name) && time.Now().Before(deadline) {
		if !sleep(a.runCtx, leavePoll) {
			return
		}
	}
	sleep(a.runCtx, leaveMargin)
	a.log.Debug("task group left its services before its stop", "namespace", ns, "name", name, "after", time.Since(start))
}
