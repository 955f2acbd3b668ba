package lbgroup

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/netsvc"
)

// svc is a service of namespace demo exported to group g1 with the given ports.
func svc(name string, labels map[string]string, ports ...v4.ServicePort) *v4.Service {
	l := map[string]string{v4.GroupLabel: "g1"}
	for k, v := range labels {
		l[k] = v
	}
	return &v4.Service{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindService},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "demo", Labels: l},
		Spec:     v4.ServiceSpec{Selector: map[string]string{"app": name}, Ports: ports}}
}

// eps are the endpoints of service name: each "app@ip:port" is a ready instance of
// application app with port portName there.
func eps(name, portName string, instances ...string) *v4.Endpoints {
	e := &v4.Endpoints{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindEndpoint},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "demo"}}
	for i, in := range instances {
		app, addr, _ := strings.Cut(in, "@")
		host, port, _ := strings.Cut(addr, ":")
		var p int
		fmt.Sscan(port, &p)
		e.Endpoints = append(e.Endpoints, v4.Endpoint{
			Target: v4.TargetRef{Kind: v4.KindApplication, Name: app, ID: fmt.Sprintf("%d.%s.demo", i, app), Namespace: "demo", Index: i},
			Ports:  []v4.EndpointPort{{Name: portName, IP: host, Port: p}}})
	}
	return e
}

var settings = Settings{BindAddr: "127.0.0.1", HTTPPort: 8080, Socket: "/run/x/admin.sock"}

func TestExportFollowsBCSRules(t *testing.T) {
	web := svc("web", map[string]string{v4.BalanceLabel: "source", v4.WeightLabelPrefix + "web-canary": "0"},
		v4.ServicePort{Name: "http", Protocol: "http", ServicePort: 80, DomainName: "Web.Example.com", Path: "/api"},
		v4.ServicePort{Name: "dns", Protocol: "udp", ServicePort: 53})
	other := svc("other", nil, v4.ServicePort{Name: "db", Protocol: "tcp", ServicePort: 5432})
	other.Metadata.Labels[v4.GroupLabel] = "internal"
	views := []netsvc.ServiceView{
		{Service: web, Endpoints: eps("web", "http", "web@10.0.0.2:80", "web-canary@10.0.0.1:80", "web@10.0.0.2:80")},
		{Service: other, Endpoints: eps("other", "db", "db@10.0.0.9:5432")},
	}
	got := Export(views, "g1")
	if len(got) != 1 || got[0].Name != "web" || got[0].Balance != "source" || got[0].MaxConn != v4.DefaultMaxConn {
		t.Fatalf("export %+v", got)
	}
	ports := got[0].Ports
	if len(ports) != 1 || ports[0].Protocol != "http" || ports[0].VHost != "web.example.com" || ports[0].Path != "/api" {
		t.Fatalf("ports %+v (udp left out, host lower-cased)", ports)
	}
	want := []Backend{{IP: "10.0.0.1", Port: 80, Weight: 0, Instance: "1.web-canary.demo"}, {IP: "10.0.0.2", Port: 80, Weight: v4.DefaultWeight, Instance: "0.web.demo"}}
	if !slices.Equal(ports[0].Backends, want) {
		t.Errorf("backends %+v, want %+v (sorted, duplicates dropped, weights by application)", ports[0].Backends, want)
	}
	if got := Export(views, "internal"); len(got) != 1 || got[0].Ports[0].Protocol != "tcp" {
		t.Errorf("internal group: %+v", got)
	}
}

func TestPlanRoutesAndConflicts(t *testing.T) {
	exports := []ExportService{
		{Namespace: "demo", Name: "any", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "http", Protocol: "http"}}},
		{Namespace: "demo", Name: "api", Balance: "leastconn", MaxConn: 10, Ports: []ExportPort{{Name: "http", Protocol: "http", VHost: "a.example.com", Path: "/v1"}}},
		{Namespace: "demo", Name: "site", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "http", Protocol: "http", VHost: "a.example.com"}}},
		{Namespace: "demo", Name: "db", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "pg", Protocol: "tcp", ServicePort: 5432}}},
		{Namespace: "demo", Name: "db2", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "pg", Protocol: "tcp", ServicePort: 5432}}},
		{Namespace: "demo", Name: "on-http", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "x", Protocol: "tcp", ServicePort: 8080}}},
		{Namespace: "demo", Name: "api2", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "http", Protocol: "http", VHost: "a.example.com", Path: "/v1"}}},
	}
	p := newPlan(exports, settings, nil)
	var order []string
	for _, r := range p.routes {
		order = append(order, r.backend)
	}
	if want := []string{"demo.api.http", "demo.site.http", "demo.any.http"}; !slices.Equal(order, want) {
		t.Errorf("routes %v, want %v (a host first, the longer path first)", order, want)
	}
	if len(p.listeners) != 1 || p.listeners[0].backend != "demo.db.pg" || len(p.conflicts) != 3 {
		t.Errorf("listeners %+v conflicts %q", p.listeners, p.conflicts)
	}
	text, _ := render(p, settings)
	for _, want := range []string{
		"bind 127.0.0.1:8080",
		"use_backend demo.api.http if { hdr(host),field(1,:) -i a.example.com } { path_beg /v1 }",
		"use_backend demo.site.http if { hdr(host),field(1,:) -i a.example.com }\n",
		"default_backend demo.any.http",
		"frontend tcp-5432\n    mode tcp\n    bind 127.0.0.1:5432\n    default_backend demo.db.pg",
		"backend demo.api.http\n    mode http\n    balance leastconn",
		"server s0 127.0.0.1:9 weight 0 maxconn 10 disabled",
		"stats socket /run/x/admin.sock mode 600 level admin expose-fd listeners",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("configuration lacks %q:\n%s", want, text)
		}
	}
}

// backendsAt are instances at 10.0.0.x:80 for each x.
func backendsAt(xs ...int) []Backend {
	var out []Backend
	for _, x := range xs {
		out = append(out, Backend{IP: fmt.Sprintf("10.0.0.%d", x), Port: 80, Weight: 10})
	}
	return out
}

func planOf(bes []Backend) *plan {
	return newPlan([]ExportService{{Namespace: "demo", Name: "web", Balance: "roundrobin", MaxConn: 100,
		Ports: []ExportPort{{Name: "http", Protocol: "http", Backends: bes}}}}, settings, nil)
}

func TestInstanceChangesAreRuntimeCommands(t *testing.T) {
	p1 := planOf(backendsAt(1, 2, 3))
	_, shape1 := render(p1, settings)
	// 2 leaves, 4 comes, 1 changes weight: same shape, three slots change.
	bes := backendsAt(1, 3, 4)
	bes[0].Weight = 0
	p2 := newPlan([]ExportService{{Namespace: "demo", Name: "web", Balance: "roundrobin", MaxConn: 100,
		Ports: []ExportPort{{Name: "http", Protocol: "http", Backends: bes}}}}, settings, p1)
	_, shape2 := render(p2, settings)
	if shape1 != shape2 {
		t.Fatalf("shapes differ:\n%s\n%s", shape1, shape2)
	}
	got := runtimeCommands(p1, p2)
	want := []string{
		"set server demo.web.http/s0 weight 0",
		"set server demo.web.http/s1 state maint",
		"set server demo.web.http/s3 addr 10.0.0.4 port 80", "set server demo.web.http/s3 weight 10", "set server demo.web.http/s3 state ready",
	}
	if !slices.Equal(got, want) {
		t.Errorf("commands\n%q\nwant\n%q (the new instance takes a slot spare before, not the one just freed)", got, want)
	}
	// Five instances outgrow four slots: a new shape (a reload), with eight slots.
	p3 := newPlan([]ExportService{{Namespace: "demo", Name: "web", Balance: "roundrobin", MaxConn: 100,
		Ports: []ExportPort{{Name: "http", Protocol: "http", Backends: backendsAt(1, 2, 3, 4, 5)}}}}, settings, p2)
	if _, shape3 := render(p3, settings); shape3 == shape2 || len(p3.backends[0].slots) != 8 {
		t.Errorf("five instances in %d slots", len(p3.backends[0].slots))
	}
}
