package client

import (
	"context"
	"net/http"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

const nodeBody = `{"apiVersion":"v4","kind":"node","metadata":{"name":"n1","resourceVersion":"7"},"spec":{"hostname":"n1","capacity":{"cpu":4}}}`

func TestNodeCalls(t *testing.T) {
	ctx := context.Background()
	f, c := newFake(t, http.StatusOK, nodeBody)
	tests := []struct {
		name       string
		call       func() (*v4.Node, error)
		method     string
		path       string
		reqType    string
		bodyPrefix string
	}{
		{"get", func() (*v4.Node, error) { return c.Node(ctx, "n1") }, http.MethodGet, "/v1/nodes/n1", "", ""},
		{"register", func() (*v4.Node, error) {
			return c.RegisterNode(ctx, &v4.Node{TypeMeta: v4.TypeMeta{Kind: v4.KindNode}, Metadata: v4.ObjectMeta{Name: "n1"}})
		}, http.MethodPost, "/v1/nodes", "application/json", `{"apiVersion":"","kind":"node","metadata":{"name":"n1"}`},
		{"update", func() (*v4.Node, error) {
			return c.UpdateNode(ctx, &v4.Node{Metadata: v4.ObjectMeta{Name: "n1"}})
		}, http.MethodPut, "/v1/nodes/n1", "application/json", ""},
		{"patch", func() (*v4.Node, error) { return c.PatchNode(ctx, "n1", []byte(`{"spec":{"disabled":true}}`)) },
			http.MethodPatch, "/v1/nodes/n1", "application/merge-patch+json", `{"spec":{"disabled":true}}`},
		{"delete", func() (*v4.Node, error) { return c.DeleteNode(ctx, "n1", WithPrecondition("7")) },
			http.MethodDelete, "/v1/nodes/n1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.call()
			if err != nil {
				t.Fatal(err)
			}
			if n.Metadata.Name != "n1" || n.Spec.Capacity.CPU != 4 || n.Metadata.ResourceVersion != "7" {
				t.Fatalf("node %+v", n)
			}
			if f.method != tt.method || f.path != tt.path || f.reqType != tt.reqType {
				t.Fatalf("request %s %s (%s), want %s %s (%s)", f.method, f.path, f.reqType, tt.method, tt.path, tt.reqType)
			}
			if tt.bodyPrefix != "" && string(f.reqBody[:min(len(f.reqBody), len(tt.bodyPrefix))]) != tt.bodyPrefix {
				t.Fatalf("body %s, want prefix %s", f.reqBody, tt.bodyPrefix)
			}
		})
	}
	if f.query != "resourceVersion=7" {
		t.Fatalf("delete query %q", f.query)
	}

	f.body = `{"kind":"List","resourceVersion":"9","items":[` + nodeBody + `]}`
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Metadata.Name != "n1" || f.path != "/v1/nodes" {
		t.Fatalf("nodes: %v, %v, path %s", nodes, err, f.path)
	}
	// The generic calls reach the node routes whatever namespace they are given.
	f.body = nodeBody
	if _, err := c.Get(ctx, v4.KindNode, "defaultGroup", "n1"); err != nil || f.path != "/v1/nodes/n1" {
		t.Fatalf("generic get: %v, path %s", err, f.path)
	}
}

func TestNodeErrors(t *testing.T) {
	_, c := newFake(t, http.StatusUnprocessableEntity,
		`{"error":{"code":422,"reason":"Invalid","message":"node n1 is invalid","details":[{"field":"spec.taints[0].value","message":"required"}]}}`)
	_, err := c.PatchNode(context.Background(), "n1", []byte(`{}`))
	if !IsInvalid(err) {
		t.Fatalf("got %v, want a 422", err)
	}
}

func TestPlan(t *testing.T) {
	f, c := newFake(t, http.StatusOK, `{"results":[{"kind":"process","namespace":"ns-a","name":"web","existing":[0],
		"placements":[{"index":1,"node":"n1","ports":[{"name":"http","hostPort":31000}]}],"unplaced":[2],
		"reason":{"nodes":2,"checks":[{"check":"insufficient memory","nodes":2}]},"message":"2 nodes: 2 insufficient memory"}],
		"skipped":[{"kind":"configmap","namespace":"ns-a","name":"cfg"}]}`)
	res, err := c.Plan(context.Background(), []byte("kind: process\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.method != http.MethodPost || f.path != "/v1/plan" || f.reqType != "application/yaml" {
		t.Fatalf("request %s %s %s", f.method, f.path, f.reqType)
	}
	r := res.Results[0]
	if r.Placements[0].Ports[0].HostPort != 31000 || r.Unplaced[0] != 2 || r.Reason.Checks[0].Nodes != 2 ||
		r.Message == "" || r.Fits() || res.Skipped[0].Name != "cfg" {
		t.Fatalf("plan %+v", res)
	}
}
