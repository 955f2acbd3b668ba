package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// An agent sets its node's CSI plugins; the same list again writes nothing; another
// node's certificate, a bad list (each field named) and an unknown node are refused.
func TestAgentCSIPlugins(t *testing.T) {
	l := newNodeListRoute(t, "csiplugins")
	body := `{"plugins":[{"name":"hostpath.csi.k8s.io","version":"1.0","controller":true,"node":true,"nodeID":"n1",` +
		`"maxVolumes":10,"topology":{"topology.hostpath.csi/node":"n1"},"controllerCapabilities":["create-delete"],` +
		`"nodeCapabilities":["stage-unstage"],"healthy":true}]}`
	l.wantSetOnce(body, `{"plugins":[]}`, func(n *v4.Node) {
		if got := n.Status.CSIPlugins; len(got) != 1 || got[0].Name != "hostpath.csi.k8s.io" || !got[0].Healthy || got[0].Topology["topology.hostpath.csi/node"] != "n1" {
			t.Fatalf("stored %+v", got)
		}
	}, func(n *v4.Node) bool { return n.Status.CSIPlugins == nil })

	wantStatus(t, l.putAs("n2", "n1", body), http.StatusForbidden)
	wantStatus(t, l.put("n1", `{"plugins":[],"extra":1}`), http.StatusBadRequest)
	bad := []struct{ body, field string }{
		{`{"plugins":[{"name":"../etc"}]}`, "plugins[0].name"},
		{`{"plugins":[{"name":"a.b"},{"name":"a.b"}]}`, `plugins[1].name`},
		{`{"plugins":[{"name":"a","version":"` + strings.Repeat("v", 200) + `"}]}`, "plugins[0].version"},
		{`{"plugins":[{"name":"a","nodeID":"x\ny"}]}`, "plugins[0].nodeID"},
		{`{"plugins":[{"name":"a","maxVolumes":-1}]}`, "plugins[0].maxVolumes"},
		{`{"plugins":[{"name":"a","topology":{"zone":"a b"}}]}`, "plugins[0].topology.zone"},
		{`{"plugins":[{"name":"a","topology":{"-k":"v"}}]}`, "plugins[0].topology"},
		{`{"plugins":[{"name":"a","controllerCapabilities":["stage-unstage"]}]}`, "plugins[0].controllerCapabilities[0]"},
		{`{"plugins":[{"name":"a","nodeCapabilities":["stage-unstage","stage-unstage"]}]}`, "plugins[0].nodeCapabilities"},
		{`{"plugins":[{"name":"a","message":"` + strings.Repeat("m", 2000) + `"}]}`, "plugins[0].message"},
	}
	for _, c := range bad {
		r := l.put("n1", c.body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.body), `"field":"`+c.field) {
			t.Errorf("%.60s: details %s do not name %s", c.body, r.body, c.field)
		}
	}
	l.wantTooMany("plugins", v4.MaxCSIPlugins, func(i int) string { return fmt.Sprintf(`{"name":"p%d.csi"}`, i) })
	wantStatus(t, l.put("n3", `{"plugins":[]}`), http.StatusNotFound)
}
