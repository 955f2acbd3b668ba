package daemon

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/store/storetest"
)

// berth dev reports, once its agent has started, what the agent runs: its node, its DNS
// server's address and its proxy's table. With auto's port 53 taken (here by the test,
// as by another berth dev), its DNS server listens on another port of 127.0.0.1 rather
// than failing the agent. It stops, agent first, when its context ends.
func TestRunDevReportsWhatItsNodeRuns(t *testing.T) {
	// Port 53 of the node's address, held (or not ours to take: the same for berth dev).
	if held, err := net.ListenPacket("udp", "127.0.0.1:53"); err == nil {
		defer held.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan DevNode, 1)
	cfg := DevConfig{
		Server: ServerConfig{DataDir: t.TempDir()},
		Agent: &agent.Config{NodeName: "dev-test", IP: "127.0.0.1", DNSAddr: agent.DNSAuto, Docker: agent.DockerOff, GPUs: agent.GPUOff,
			Drivers: map[string]driver.Driver{"process": fake.New("process")}},
		OnReady: func(_ string, node DevNode) { ready <- node },
	}
	cfg.Server.API.Listen, cfg.Server.API.Logger = "127.0.0.1:0", storetest.QuietLogger()
	done := make(chan error, 1)
	go func() { done <- RunDev(ctx, cfg) }()
	select {
	case node := <-ready:
		if node.Name != "dev-test" || node.ProxyTable != "" {
			t.Errorf("node %+v, want dev-test without a proxy", node)
		}
		if !strings.HasPrefix(node.DNSAddr, "127.0.0.1:") || node.DNSAddr == "127.0.0.1:53" {
			t.Errorf("DNS on %q, want a free port of 127.0.0.1 (port 53 is taken)", node.DNSAddr)
		}
	case err := <-done:
		t.Fatalf("RunDev: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("berth dev not ready within 60s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunDev: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RunDev did not stop within 30s")
	}
}
