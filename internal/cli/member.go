package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/daemon"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
)

// memberFlags make `berth server`'s embedded etcd a member of a cluster (docs/ha.md).
type memberFlags struct {
	name, peerListen, clientListen string
	join                           string
}

func (m *memberFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&m.name, "etcd-name", "", "name of this server's etcd member, unique in the cluster (default: the host name)")
	fl.StringVar(&m.peerListen, "etcd-peer-listen", "", "host:port the other servers' etcd members reach this one on (forms a cluster; kept in the data dir)")
	fl.StringVar(&m.clientListen, "etcd-client-listen", "", "host:port of this member's etcd client URL (with --etcd-peer-listen)")
	fl.StringVar(&m.join, "join", "", "address of a running berth server whose cluster this server joins on its first start (needs the cluster's --join-token)")
}

// joinHTTPClient trusts the server to join as an agent does: by the CA hash the token
// carries, or the CA of --ca-cert.
func joinHTTPClient(tok jointoken.Token, o *options) (*http.Client, error) {
	if o.caCert != "" {
		roots, err := client.LoadCAFile(o.caCert)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %w", err)
		}
		return client.HTTPClient(roots, nil), nil
	}
	if tok.CAHash == "" {
		return nil, errors.New("--join needs a join token with the cluster's CA hash (berth-<id>.<secret>::sha256:<hex>: the first server's DATA-DIR/join-token) or --ca-cert")
	}
	return client.HTTPClientTLS(pki.PinnedConfig(tok.CAHash, nil)), nil
}

// joinBudget bounds how long a first start keeps asking the join target (it may be
// starting too, or another server may still be joining).
const joinBudget = 2 * time.Minute

// config builds the store's member config, nil when no flag asks for one (a data dir that
// holds a member's record still restarts as that member).
func (m memberFlags) config(f serverFlags, joinToken string, o *options, log *slog.Logger) (*daemon.MemberConfig, error) {
	if m == (memberFlags{}) {
		return nil, nil
	}
	if len(f.etcdEndpoints) > 0 {
		return nil, errors.New("--etcd-name, --etcd-peer-listen, --etcd-client-listen and --join are for the embedded etcd; " +
			"with --etcd-endpoints every server simply uses the same etcd")
	}
	mc := &daemon.MemberConfig{Name: m.name, PeerListen: m.peerListen, ClientListen: m.clientListen}
	if m.join == "" {
		return mc, nil
	}
	if joinToken == "" {
		return nil, errors.New("--join needs the cluster's join token (--join-token or --join-token-file)")
	}
	target, err := client.ParseServerURL(m.join)
	if err != nil {
		return nil, fmt.Errorf("--join: %w", err)
	}
	if target.Scheme != "https" {
		return nil, fmt.Errorf("--join %s: servers join over https only (the join token must not cross the network in the clear)", m.join)
	}
	tok, err := jointoken.Parse(joinToken)
	if err != nil {
		return nil, fmt.Errorf("--join-token: %w", err)
	}
	hc, err := joinHTTPClient(tok, o)
	if err != nil {
		return nil, err
	}
	c, err := client.New(target.String(), client.WithHTTPClient(hc), client.WithBearerToken(tok.String()), client.WithUserAgent("berth-server/"+Version))
	if err != nil {
		return nil, fmt.Errorf("--join: %w", err)
	}
	mc.Join = func(ctx context.Context, name, peerURL string) (cluster.Joined, error) {
		return joinCluster(ctx, c, name, peerURL, joinBudget, log)
	}
	return mc, nil
}

// joinCluster asks the join target to add this member, retrying while it cannot be
// reached or answers 503 (no quorum yet, another server joining); other answers are final.
func joinCluster(ctx context.Context, c *client.Client, name, peerURL string, budget time.Duration, log *slog.Logger) (cluster.Joined, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		joined, err := c.JoinCluster(rctx, name, peerURL)
		rcancel()
		status := client.StatusOf(err)
		switch {
		case err == nil:
			return joined, nil
		case status == http.StatusUnauthorized:
			return cluster.Joined{}, fmt.Errorf("the server at %s refused the join token: %w", c.Server(), err)
		case isUntrusted(err):
			return cluster.Joined{}, fmt.Errorf("the server to join is not the cluster of the token's CA hash: %w", err)
		case status != 0 && status != http.StatusServiceUnavailable:
			return cluster.Joined{}, fmt.Errorf("the server at %s refused the join: %w", c.Server(), err)
		}
		log.Warn("cannot join yet; retrying", "server", c.Server(), "err", err)
		select {
		case <-ctx.Done():
			if context.Cause(ctx) != context.DeadlineExceeded {
				return cluster.Joined{}, fmt.Errorf("join canceled: %w", context.Cause(ctx))
			}
			return cluster.Joined{}, fmt.Errorf("no answer from the server to join at %s within %s: %w", c.Server(), budget, err)
		case <-time.After(time.Second):
		}
	}
}

func isUntrusted(err error) bool {
	_, ok := errors.AsType[*client.UntrustedError](err)
	return ok
}
