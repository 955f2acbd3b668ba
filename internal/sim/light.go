package sim

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
)

// simNode is a simulated node: a light node or a whole agent.
type simNode interface {
	NodeName() string
	Ready() <-chan struct{}
	Run(ctx context.Context) error
}

// prepareLight builds what the light nodes share: one join client (the join needs no
// node certificate, so a single transport and its TLS sessions serve every join), the
// beat scheduler, and the machine every node describes.
func (s *Sim) prepareLight() error {
	tok, err := jointoken.Parse(s.cfg.Token)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	var hc = client.HTTPClientTLS(nil)
	switch {
	case s.cfg.CACertFile != "":
		if s.roots, err = client.LoadCAFile(s.cfg.CACertFile); err != nil {
			return fmt.Errorf("sim: CA certificate: %w", err)
		}
		hc = client.HTTPClient(s.roots, nil)
	case tok.CAHash != "":
		hc = client.HTTPClientTLS(pki.PinnedConfig(tok.CAHash, nil))
	default:
		return errors.New("sim: the join token carries no CA hash and no CA certificate was given")
	}
	// Thousands of joins in a ramp: idle connections kept for the next ones, not closed
	// and opened again with a full handshake (and the pinned CA's check) each time.
	if t, ok := hc.Transport.(*http.Transport); ok {
		t.MaxIdleConnsPerHost = 16
	}
	s.joiner, err = client.New(strings.Join(s.cfg.ServerURLs, ","), client.WithHTTPClient(hc),
		client.WithBearerToken(tok.String()), client.WithUserAgent("berth-agent/"+agent.Version))
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	hb, rep := s.cfg.HeartbeatInterval, s.cfg.ReportInterval
	if hb <= 0 {
		hb = agent.DefaultHeartbeatInterval
	}
	if rep <= 0 {
		rep = agent.DefaultReportInterval
	}
	s.beats = &beatScheduler{interval: hb, reportEvery: max(1, int(rep/hb))}
	// The nodes describe the disk of the data dir, as agents their own.
	if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("sim: data directory: %w", err)
	}
	s.machine = machine(s.cfg.DataDir)
	s.loopback = true
	for _, u := range s.cfg.ServerURLs {
		s.loopback = s.loopback && isLoopback(u)
	}
	return nil
}

// serverRoots are the roots that verify the servers: the CA certificate given, or the
// cluster CA of the first join's answer (its hash was pinned by the join).
func (s *Sim) serverRoots(caPEM []byte) (*x509.CertPool, error) {
	s.rootsMu.Lock()
	defer s.rootsMu.Unlock()
	if s.roots != nil {
		return s.roots, nil
	}
	ca, err := pki.ParseCertificate(caPEM)
	if err != nil {
		return nil, fmt.Errorf("the server's answer: CA: %w", err)
	}
	s.roots = x509.NewCertPool()
	s.roots.AddCert(ca)
	return s.roots, nil
}

// nodeObject is the node a light node registers: this machine's resources, as each
// agent on it would report them.
func (s *Sim) nodeObject(name string) *v4.Node {
	return &v4.Node{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode},
		Metadata: v4.ObjectMeta{Name: name},
		Spec:     v4.NodeSpec{Hostname: name, IP: s.ip, Capacity: s.machine, Allocatable: agent.Allocatable(s.machine)},
		Status:   v4.NodeStatus{Phase: v4.NodeReady, AgentVersion: agent.Version},
	}
}

// machine is this machine as an agent whose data dir is dataDir measures it, with
// memory it cannot read taken as 4 GiB, so that the nodes still take task groups.
func machine(dataDir string) v4.NodeResources {
	r, _ := agent.Capacity(dataDir)
	if r.MemoryMB == 0 {
		r.MemoryMB = 4096
	}
	return r
}

// isLoopback reports whether a server address names a loopback IP.
func isLoopback(server string) bool {
	u, err := client.ParseServerURL(server)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback() && ip.To4() != nil
}
