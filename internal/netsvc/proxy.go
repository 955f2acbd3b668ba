package netsvc

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
)

// ProxyConfig configures a service proxy.
type ProxyConfig struct {
	// NFT is the command that reads a ruleset on its standard input (default
	// ["nft", "-f", "-"]; tests run it in a network namespace of their own).
	NFT    []string
	Logger *slog.Logger
}

// Proxy forwards every service's VIP:port to its ready instances with the kernel's
// NAT (nftables), on the node it runs on (docs/services.md, "Virtual IPs"). It writes its
// whole table at the start, then, in one transaction at each change of the catalog, the
// services that changed: an instance that leaves the endpoints gets no new connection
// from then on (established ones keep their translation). The table outlives the
// agent, so forwarding goes on while it restarts.
type Proxy struct {
	cat     *Catalog
	changed <-chan struct{}
	nft     []string
	log     *slog.Logger
	// state is what the last update left in the kernel; nil until a whole table is
	// written (at the start, and after a failed update, since the kernel's table is then
	// not known).
	state *tableState
}

// NewProxy returns a proxy of cat's services; Run drives it.
func NewProxy(cat *Catalog, cfg ProxyConfig) *Proxy {
	if len(cfg.NFT) == 0 {
		cfg.NFT = []string{"nft", "-f", "-"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Proxy{cat: cat, changed: cat.Subscribe(), nft: cfg.NFT, log: cfg.Logger}
}

// Run writes the table once the catalog is first listed, and after every change of the
// catalog, until ctx ends (Follow).
func (p *Proxy) Run(ctx context.Context) {
	Follow(ctx, p.cat, p.changed, nil, "service proxy", p.log, p.Sync)
}

// Sync brings the table in line with the catalog as it is now: the whole table the first
// time (and after a failure), then only what changed, each in one transaction. Run calls
// it; a caller of Sync must not run Run too.
func (p *Proxy) Sync(ctx context.Context) error {
	fws := forwards(p.cat.Services())
	if p.state == nil {
		text, st := renderFull(fws)
		if err := applyRuleset(ctx, p.nft, text); err != nil {
			return err
		}
		p.state = st
		return nil
	}
	text := renderDelta(p.state, fws)
	if text == "" {
		return nil
	}
	if err := applyRuleset(ctx, p.nft, text); err != nil {
		p.state = nil // the next update writes the whole table
		return err
	}
	return nil
}

// applyRuleset hands a ruleset to nft in one transaction.
func applyRuleset(ctx context.Context, nft []string, ruleset string) error {
	cmd := exec.CommandContext(ctx, nft[0], nft[1:]...)
	cmd.Stdin = strings.NewReader(ruleset)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		return fmt.Errorf("%s: %w: %s", strings.Join(nft, " "), err, msg)
	}
	return nil
}

// RemoveTable deletes the proxy's table (a node whose proxy is turned off): no VIP is
// forwarded there any more. A table that is not there is no error.
func RemoveTable(ctx context.Context, nft []string) error {
	if len(nft) == 0 {
		nft = []string{"nft", "-f", "-"}
	}
	// Adding first makes the delete succeed whether or not the table was there.
	return applyRuleset(ctx, nft, fmt.Sprintf("add table ip %s\ndelete table ip %s\n", TableName, TableName))
}
