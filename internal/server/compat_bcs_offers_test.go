package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
	"github.com/berthhq/berth/internal/store/storetest"
)

// `bcs-client offer`: one offer per Ready, enabled node, its free resources (allocatable
// less what its live task groups reserve, the ports of its ranges nobody holds) in BCS's
// OfferWithDelta, decoded strictly as BCS's types.
func TestBCSOffers(t *testing.T) {
	url := newTestServer(t, Config{})
	storetest.CreateNode(t, testStore, "of-1", v4.NodeResources{CPU: 8, MemoryMB: 4096, DiskMB: 1000, Extended: map[string]float64{"nvidia.com/gpu": 2}}, func(n *v4.Node) {
		n.Spec.IP, n.Spec.Hostname = "10.1.0.1", "host-1"
		n.Spec.PortRanges = []v4.PortRange{{Begin: 31000, End: 31010}}
		n.Spec.Attributes = v4.NodeAttributes{Text: map[string]string{"zone": "z1"}, Scalar: map[string]float64{"ssd": 2}, Set: map[string][]string{"racks": {"a", "b"}}}
		n.Spec.Taints = []v4.Taint{{Key: "dedicated", Value: "db", Effect: v4.TaintNoSchedule}}
		n.Status.BusyPorts = []v4.BusyPort{{Port: 31005, Protocol: "tcp"}}
	})
	storetest.CreateNode(t, testStore, "of-2", v4.NodeResources{CPU: 4}, func(n *v4.Node) { n.Spec.Disabled = true })
	storetest.CreateNode(t, testStore, "of-3", v4.NodeResources{CPU: 4}, func(n *v4.Node) { n.Status.Phase = v4.NodeLost })
	putTaskGroup(t, "of", "0.web.of.c.1", "of-1", func(tg *v4.TaskGroup) {
		tg.Spec.Resources = v4.NodeResources{CPU: 1.5, MemoryMB: 512, DiskMB: 100, Extended: map[string]float64{"nvidia.com/gpu": 1}}
		tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31000}, {Name: "x", HostPort: 31003}, {Name: "out", HostPort: 8080}}
	})
	putTaskGroup(t, "of", "1.web.of.c.1", "of-1", func(tg *v4.TaskGroup) {
		tg.Spec.Resources = v4.NodeResources{CPU: 4, MemoryMB: 4096}
		tg.Status.Phase = v4.StatusFinish // ended: holds nothing
	})
	a := bcsCall(t, http.MethodGet, url+bcs.GatewayPrefix+"/cluster/current/offers", "", "")
	wantBCS(t, a, 0)
	var offers []bcswire.OfferWithDelta
	if err := bcswire.Decode(a.Data, &offers); err != nil {
		t.Fatalf("%v: %s", err, a.Data)
	}
	if len(offers) != 1 || *offers[0].AgentID.Value != "of-1" || *offers[0].Hostname != "host-1" || offers[0].DeltaResource == nil {
		t.Fatalf("offers: %s", a.Data)
	}
	scalars, ports := map[string]float64{}, ""
	for _, r := range offers[0].Resources {
		if r.Scalar != nil {
			scalars[*r.Name] = *r.Scalar.Value
		}
		if r.Ranges != nil {
			for _, pr := range r.Ranges.Range {
				ports += fmt.Sprintf(" %d-%d", *pr.Begin, *pr.End)
			}
		}
	}
	if scalars["cpus"] != 6.5 || scalars["mem"] != 3584 || scalars["disk"] != 900 || scalars["nvidia.com/gpu"] != 1 {
		t.Errorf("free scalars %v", scalars)
	}
	if ports != " 31001-31002 31004-31004 31006-31010" {
		t.Errorf("free ports %q", ports)
	}
	var names []string
	for _, at := range offers[0].Attributes {
		names = append(names, *at.Name)
	}
	if strings.Join(names, ",") != "InnerIP,zone,ssd,racks,NoSchedule" || *offers[0].Attributes[0].Text.Value != "10.1.0.1" ||
		offers[0].Attributes[4].Set.Item[0] != "dedicated=db" || *offers[0].Attributes[2].Type != 0 || *offers[0].Attributes[3].Type != 2 {
		t.Errorf("attributes %s", a.Data)
	}
}

// A token limited to one namespace reads no cluster-wide data through the new routes:
// offers need read on nodes and every namespace's task groups, the transactions of the
// cluster or of another namespace are refused with /v1's 403; its own namespace's answer.
func TestBCSOffersAndTransactionsLimitedToken(t *testing.T) {
	url := newTestServer(t, Config{})
	storetest.CreateNode(t, testStore, "lt-1", v4.NodeResources{CPU: 8}, func(n *v4.Node) { n.Spec.IP = "10.2.0.1" })
	tenant := tokenWithPolicy(t, url, `{"kind":"acl-policy","metadata":{"name":"tenant"},"rules":[{"namespaces":["mine"],"kinds":["*"],"verbs":["*"]}]}`, "tenant", "")
	base := url + bcs.GatewayPrefix
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/cluster/current/offers"},
		{http.MethodGet, "/transactions"},
		{http.MethodGet, "/transactions/other?objKind=application"},
		{http.MethodDelete, "/transactions/other/application-1"},
	} {
		a := bcsCall(t, c.method, base+c.path, "", tenant)
		if a.status != http.StatusForbidden || a.Result || strings.Contains(string(a.Data), "lt-1") {
			t.Errorf("%s %s with a namespace's token: HTTP %d %+v", c.method, c.path, a.status, a)
		}
	}
	a := bcsCall(t, http.MethodGet, base+"/transactions/mine?objKind=application&objName=web", "", tenant)
	wantBCS(t, a, 0)
	var list []bcswire.Transaction
	if err := bcswire.Decode(a.Data, &list); err != nil || len(list) != 0 || len(a.Warnings) != 1 {
		t.Fatalf("transactions of its namespace: %v %+v", err, a)
	}
	a = bcsCall(t, http.MethodDelete, base+"/transactions/mine/application-1", "", tenant)
	if a.status != http.StatusOK || a.Code != bcs.CodeScheduler || !strings.Contains(a.Message, "no transaction mine/application-1") {
		t.Fatalf("delete of an unknown transaction: HTTP %d %+v", a.status, a)
	}
}

// What bcs-client sends that berth does not serve answers BCS's envelope, 404 and
// 1405202, saying why: as --delete, the console proxy's other routes, the older
// scheduler's crr and crd routes.
func TestBCSUnservedCommands(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + bcs.GatewayPrefix
	for _, c := range []struct{ method, path, why string }{
		{http.MethodDelete, "/agentsettings/?ips=10.0.0.1", "no longer served"},
		{http.MethodGet, "/webconsole/other", "create_exec, start_exec and resize_exec"},
		{http.MethodPost, "/crr/register", "/customresourcedefinitions"},
		{http.MethodGet, "/crd/namespaces/bcs/crontab", "/customresources/"},
	} {
		a := bcsCall(t, c.method, base+c.path, "", "")
		if a.status != http.StatusNotFound || a.Code != bcs.CodeNotFound || !strings.Contains(a.Message, c.why) {
			t.Errorf("%s %s: HTTP %d %+v", c.method, c.path, a.status, a)
		}
	}
}
