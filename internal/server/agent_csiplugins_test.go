package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// An agent sets its node's CSI plugins; the same list again writes nothing; another
// node's certificate, a bad list (each field named) and an unknown node are refused.
func TestAgentCSIPlugins(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	put := func(node, body string) response {
		return callAs(t, node, http.MethodPut, url+"/v1/agent/nodes/"+node+"/csiplugins", body, "")
	}
	stored := func() []v4.CSIPlugin {
		t.Helper()
		n, err := testStore.Get(context.Background(), v4.KindNode, "", "n1")
		if err != nil {
			t.Fatal(err)
		}
		return n.(*v4.Node).Status.CSIPlugins
	}
	body := `{"plugins":[{"name":"hostpath.csi.k8s.io","version":"1.0","controller":true,"node":true,"nodeID":"n1",` +
		`"maxVolumes":10,"topology":{"topology.hostpath.csi/node":"n1"},"controllerCapabilities":["create-delete"],` +
		`"nodeCapabilities":["stage-unstage"],"healthy":true}]}`
	wantStatus(t, put("n1", body), http.StatusNoContent)
	if got := stored(); len(got) != 1 || got[0].Name != "hostpath.csi.k8s.io" || !got[0].Healthy || got[0].Topology["topology.hostpath.csi/node"] != "n1" {
		t.Fatalf("stored %+v", got)
	}
	before := revision(t, context.Background())
	wantStatus(t, put("n1", body), http.StatusNoContent)
	if after := revision(t, context.Background()); after != before {
		t.Errorf("the same list moved the revision from %d to %d", before, after)
	}
	wantStatus(t, put("n1", `{"plugins":[]}`), http.StatusNoContent)
	if got := stored(); got != nil {
		t.Errorf("cleared list stored as %v", got)
	}

	wantStatus(t, callAs(t, "n2", http.MethodPut, url+"/v1/agent/nodes/n1/csiplugins", body, ""), http.StatusForbidden)
	wantStatus(t, put("n1", `{"plugins":[],"extra":1}`), http.StatusBadRequest)
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
		r := put("n1", c.body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.body), `"field":"`+c.field) {
			t.Errorf("%.60s: details %s do not name %s", c.body, r.body, c.field)
		}
	}
	many := make([]string, v4.MaxCSIPlugins+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"name":"p%d.csi"}`, i)
	}
	wantStatus(t, put("n1", `{"plugins":[`+strings.Join(many, ",")+`]}`), http.StatusUnprocessableEntity)
	wantStatus(t, put("n3", `{"plugins":[]}`), http.StatusNotFound)
}
