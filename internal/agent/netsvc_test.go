package agent

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/store"
)

// lookupA asks the agent's DNS server for name's addresses (nil on an error answer).
func lookupA(t *testing.T, addr, name string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	resp, _, err := new(dns.Client).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	var out []string
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out
}

// The agent's DNS server answers for the services of the cluster as the server's
// endpoints change, and its processes are told where it is.
func TestClusterDNSFollowsTheCatalog(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	var mu sync.Mutex
	var env []string
	drv.SetStartHook(func(_ context.Context, task *driver.Task) error {
		mu.Lock()
		defer mu.Unlock()
		env = task.Env
		return nil
	})
	ra := startAgent(t, c, t.TempDir(), drv, func(cfg *Config) { cfg.DNSAddr = "127.0.0.1:0" })
	var addr string
	waitFor(t, "the DNS server", func() bool { addr = ra.a.DNSAddr(); return addr != "" })

	docs, err := v4.Parse([]byte(`{"apiVersion":"v4","kind":"service","metadata":{"name":"web","namespace":"demo"},
		"spec":{"selector":{"app":"web"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	eps := func(ips ...string) *v4.Endpoints {
		ep := &v4.Endpoints{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindEndpoint},
			Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"}}
		for i, ip := range ips {
			ep.Endpoints = append(ep.Endpoints, v4.Endpoint{ContainerIP: ip, Target: v4.TargetRef{Name: "web", Index: i},
				Ports: []v4.EndpointPort{{Name: "http", IP: ip, Port: 8080}}})
		}
		return ep
	}
	if err := testStore.Create(context.Background(), eps("10.1.0.1", "10.1.0.2"), store.Raw{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web.demo to answer both instances", func() bool {
		return slices.Equal(lookupA(t, addr, "web.demo.svc.cluster.local"), []string{"10.1.0.1", "10.1.0.2"})
	})
	cur, err := testStore.Get(context.Background(), v4.KindEndpoint, "demo", "web")
	if err != nil {
		t.Fatal(err)
	}
	one := eps("10.1.0.2")
	one.Metadata.ResourceVersion = cur.GetMeta().ResourceVersion
	if err := testStore.Update(context.Background(), one, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web.demo to answer the one left", func() bool {
		return slices.Equal(lookupA(t, addr, "web.demo"), []string{"10.1.0.2"})
	})

	createTG(t, processTG("0.web.ns-a.c.1"))
	waitFor(t, "the process to start", func() bool { mu.Lock(); defer mu.Unlock(); return env != nil })
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"BERTH_DNS=" + addr, "BCS_DNS=" + addr} {
		if !slices.Contains(env, want) {
			t.Errorf("the process's env lacks %s: %s", want, strings.Join(env, " "))
		}
	}
}

// A DNS address that is taken (another berth dev has port 53 of the node's IP) is an
// error at the start, unless the config names a fallback (berth dev's): the server then
// listens there, the agent runs, and its processes are told the fallback.
func TestClusterDNSFallback(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.LocalAddr().String()
	c := newCluster(t)
	tests := []struct {
		name     string
		fallback string
		wantErr  bool
	}{
		{"no-fallback", "", true},
		{"fallback", "127.0.0.1:0", false},
	}
	for _, tt := range tests {
		ra := startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) {
			cfg.NodeName, cfg.DNSAddr, cfg.DNSFallback = "dns-"+tt.name, busy, tt.fallback
		})
		if tt.wantErr {
			select {
			case err := <-ra.done:
				if err == nil || !strings.Contains(err.Error(), busy) {
					t.Errorf("%s: Run = %v, want an error naming %s", tt.name, err, busy)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the agent runs with its DNS address taken", tt.name)
			}
			ra.done <- nil // for stop
			continue
		}
		var addr string
		waitFor(t, "the DNS server", func() bool { addr = ra.a.DNSAddr(); return addr != "" })
		if addr == busy || !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Errorf("%s: DNS on %s, want a free port of 127.0.0.1", tt.name, addr)
		}
		if got := lookupA(t, addr, "nothing.demo.svc.cluster.local"); len(got) != 0 {
			t.Errorf("%s: an unknown service answered %v", tt.name, got)
		}
		if table := ra.a.ProxyTable(); table != "" {
			t.Errorf("%s: ProxyTable = %q with the proxy off", tt.name, table)
		}
		ra.stop()
	}
}
