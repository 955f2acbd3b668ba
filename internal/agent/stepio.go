package agent

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/stepio"
)

// stepGitProtocols are the git transports an operator may allow besides https.
var stepGitProtocols = []string{"http", "git", "ssh"}

// stepFetchPolicy is the policy of workflow steps' http and git inputs (docs/agent.md,
// -step-fetch-allow): the node's own addresses are its interfaces' and IP.
func (c Config) stepFetchPolicy() (*stepio.Policy, error) {
	p := &stepio.Policy{}
	for _, s := range c.StepFetchAllow {
		s = strings.TrimSpace(s)
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("step fetch allow %q: not a CIDR or an address", s)
			}
			pf = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		p.Allow = append(p.Allow, pf.Masked())
	}
	for _, g := range c.StepGitProtocols {
		if !slices.Contains(stepGitProtocols, g) {
			return nil, fmt.Errorf("step git protocol %q: one of %s (https is always allowed)", g, strings.Join(stepGitProtocols, ", "))
		}
		p.GitProtocols = append(p.GitProtocols, g)
	}
	ip, _ := netip.ParseAddr(c.IP)
	p.NodeAddrs = func() ([]netip.Addr, error) {
		addrs, err := stepio.InterfaceAddrs()
		if ip.IsValid() {
			addrs = append(addrs, ip.Unmap())
		}
		return addrs, err
	}
	return p, nil
}

// stepArtifacts are the server's artifact routes of workflow steps, on the server that
// answers (executor.StepArtifacts).
type stepArtifacts struct{ a *Agent }

func (s stepArtifacts) AgentGetArtifact(ctx context.Context, ns, taskGroup, input string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := s.a.servers.do(ctx, func(c *client.Client) error {
		var err error
		rc, err = c.AgentGetArtifact(ctx, ns, taskGroup, input)
		return err
	})
	return rc, err
}

func (s stepArtifacts) AgentPutArtifact(ctx context.Context, ns, taskGroup, name string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error) {
	var out v4.StoredArtifact
	err := s.a.servers.do(ctx, func(c *client.Client) error {
		var err error
		out, err = c.AgentPutArtifact(ctx, ns, taskGroup, name, body, size)
		return err
	})
	return out, err
}
