package executor

import (
	"reflect"
	"testing"

	"github.com/berthhq/berth/internal/driver"
)

// A container's resolver is the node's cluster DNS server on port 53, with the pod's
// namespace first in the search list and ndots:5, so that web, web.demo and
// web.demo.svc reach web.demo.svc.DOMAIN (the service's VIP) before anything else.
func TestContainerDNS(t *testing.T) {
	tests := []struct {
		name string
		dns  *DNS
		want *driver.DNS
	}{
		{"port 53", &DNS{Addr: "10.0.0.5:53", Domain: "cluster.local"}, &driver.DNS{Servers: []string{"10.0.0.5"},
			Search: []string{"demo.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}},
		{"another port: a resolver file cannot say it", &DNS{Addr: "10.0.0.5:5353", Domain: "cluster.local"}, nil},
		{"no DNS server", nil, nil},
	}
	for _, tt := range tests {
		p := &pod{e: &Executor{cfg: Config{DNS: tt.dns}}, ns: "demo", name: "web"}
		if got := p.containerDNS(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
