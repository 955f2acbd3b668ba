package lbgroup

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/netsvc"
)

// FuzzRenderKeepsOneLinePerRule: whatever a user puts in a service that the API accepts
// (names, host, path, labels), its part of the HAProxy configuration is the lines berth
// writes and nothing else: no newline, comment or second keyword smuggled in.
func FuzzRenderKeepsOneLinePerRule(f *testing.F) {
	f.Add("web", "http", "www.example.com", "/api", "g1", "roundrobin", "10", "100")
	f.Add("db", "pg", "", "", "g1,g2", "source", "0", "5")
	f.Add("x", "p", "a.b", "/a b\nfrontend evil", "g1", "leastconn", "256", "1")
	f.Fuzz(func(t *testing.T, name, port, host, path, groups, balance, weight, maxconn string) {
		svc := &v4.Service{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindService},
			Metadata: v4.ObjectMeta{Name: name, Namespace: "demo", Labels: map[string]string{v4.GroupLabel: groups,
				v4.BalanceLabel: balance, v4.WeightLabelPrefix + "web": weight, v4.MaxConnLabel: maxconn}},
			Spec: v4.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v4.ServicePort{
				{Name: port, Protocol: "http", ServicePort: 80, DomainName: host, Path: path}}}}
		if v4.Validate(svc) != nil || len(svc.LBGroups()) == 0 {
			return // the API refuses it: it never reaches a node
		}
		e := eps(name, port, "web@10.0.0.1:80")
		views := []netsvc.ServiceView{{Service: svc, Endpoints: e}}
		text, _ := render(newPlan(Export(views, svc.LBGroups()[0]), settings, nil), settings)
		for line := range strings.Lines(text) {
			l := strings.TrimSpace(line)
			switch {
			case l == "", strings.HasPrefix(l, "# Written by berth"):
			case strings.ContainsAny(l, "#\"'\\\r"):
				t.Fatalf("a line holds a comment or quote: %q", l)
			}
		}
		for _, kw := range []string{"frontend ", "backend ", "global", "defaults"} {
			if n := strings.Count(text, "\n"+kw); n > 3 {
				t.Fatalf("%d %q sections from one service:\n%s", n, kw, text)
			}
		}
	})
}
