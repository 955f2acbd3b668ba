package docker

import (
	"slices"
	"testing"

	"github.com/moby/moby/api/types/container"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/params"
)

func TestApplyDNS(t *testing.T) {
	dnsOf := func(servers ...string) *driver.DNS {
		return &driver.DNS{Servers: servers, Search: []string{"demo.svc.cluster.local"}, Options: []string{"ndots:5"}}
	}
	tests := []struct {
		name string
		task driver.Task
		own  []string // the spec's dns parameter
		want []string
	}{
		{"the node's server", driver.Task{Setup: &driver.ContainerSetup{DNS: dnsOf("10.0.0.5"), NetworkMode: "BRIDGE"}}, nil, []string{"10.0.0.5"}},
		{"the spec's own wins", driver.Task{Setup: &driver.ContainerSetup{DNS: dnsOf("10.0.0.5"), NetworkMode: "BRIDGE"}}, []string{"8.8.8.8"}, []string{"8.8.8.8"}},
		{"loopback is out of a bridge's reach", driver.Task{Setup: &driver.ContainerSetup{DNS: dnsOf("127.0.0.1"), NetworkMode: "BRIDGE"}}, nil, nil},
		{"loopback is the host's in host mode", driver.Task{Setup: &driver.ContainerSetup{DNS: dnsOf("127.0.0.1"), NetworkMode: "HOST"}}, nil, []string{"127.0.0.1"}},
		{"a joined container has its owner's", driver.Task{Setup: &driver.ContainerSetup{DNS: dnsOf("10.0.0.5"), JoinTask: "ns.pod.main"}}, nil, nil},
		{"no cluster DNS", driver.Task{Setup: &driver.ContainerSetup{NetworkMode: "BRIDGE"}}, nil, nil},
	}
	for _, tt := range tests {
		own, err := params.Addrs(tt.own)
		if err != nil {
			t.Fatal(err)
		}
		want, err := params.Addrs(tt.want)
		if err != nil {
			t.Fatal(err)
		}
		hc := &container.HostConfig{DNS: own}
		applyDNS(&tt.task, hc)
		if !slices.Equal(hc.DNS, want) {
			t.Errorf("%s: DNS %v, want %v", tt.name, hc.DNS, tt.want)
		}
		if len(tt.own) == 0 && len(tt.want) > 0 && !slices.Equal(hc.DNSSearch, tt.task.Setup.DNS.Search) {
			t.Errorf("%s: search %v", tt.name, hc.DNSSearch)
		}
		if len(tt.own) == 0 && len(tt.want) > 0 && !slices.Equal(hc.DNSOptions, []string{"ndots:5"}) {
			t.Errorf("%s: options %v, want ndots:5", tt.name, hc.DNSOptions)
		}
	}
}

// The spec's own dns-search and dns-option parameters win over the cluster's.
func TestApplyDNSKeepsTheSpecsOptions(t *testing.T) {
	task := driver.Task{Setup: &driver.ContainerSetup{NetworkMode: "BRIDGE",
		DNS: &driver.DNS{Servers: []string{"10.0.0.5"}, Search: []string{"demo.svc.cluster.local"}, Options: []string{"ndots:5"}}}}
	hc := &container.HostConfig{DNSSearch: []string{"example.org"}, DNSOptions: []string{"ndots:1", "timeout:2"}}
	applyDNS(&task, hc)
	if len(hc.DNS) != 1 || !slices.Equal(hc.DNSSearch, []string{"example.org"}) || !slices.Equal(hc.DNSOptions, []string{"ndots:1", "timeout:2"}) {
		t.Errorf("DNS %v, search %v, options %v; want the node's server with the spec's search and options", hc.DNS, hc.DNSSearch, hc.DNSOptions)
	}
}
