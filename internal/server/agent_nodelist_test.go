package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// nodeListRoute is an agent's PUT of a list its node's status keeps (busy ports, CSI
// plugins: internal/agentapi's nodeList), on a test server with node n1.
type nodeListRoute struct {
	t    *testing.T
	url  string
	path string // the route below /v1/agent/nodes/{name}/
}

func newNodeListRoute(t *testing.T, path string) nodeListRoute {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	return nodeListRoute{t: t, url: url, path: path}
}

// put PUTs body to node's route with that node's certificate.
func (l nodeListRoute) put(node, body string) response { return l.putAs(node, node, body) }

// putAs PUTs body to node's route with cert's certificate.
func (l nodeListRoute) putAs(cert, node, body string) response {
	l.t.Helper()
	return callAs(l.t, cert, http.MethodPut, l.url+"/v1/agent/nodes/"+node+"/"+l.path, body, "")
}

// stored is node n1 as the store has it.
func (l nodeListRoute) stored() *v4.Node {
	l.t.Helper()
	n, err := testStore.Get(context.Background(), v4.KindNode, "", "n1")
	if err != nil {
		l.t.Fatal(err)
	}
	return n.(*v4.Node)
}

// wantSetOnce PUTs body to n1 and hands the node to check, PUTs it again and wants no
// write (the revision stays), then PUTs empty and wants the list gone (isNil).
func (l nodeListRoute) wantSetOnce(body, empty string, check func(*v4.Node), isNil func(*v4.Node) bool) {
	t := l.t
	t.Helper()
	wantStatus(t, l.put("n1", body), http.StatusNoContent)
	check(l.stored())
	before := revision(t, context.Background())
	wantStatus(t, l.put("n1", body), http.StatusNoContent)
	if after := revision(t, context.Background()); after != before {
		t.Errorf("the same list moved the revision from %d to %d", before, after)
	}
	wantStatus(t, l.put("n1", empty), http.StatusNoContent)
	if n := l.stored(); !isNil(n) {
		t.Errorf("cleared list stored as %+v", n.Status)
	}
}

// wantTooMany wants a list of max+1 items, item(i) each, refused.
func (l nodeListRoute) wantTooMany(key string, max int, item func(i int) string) {
	l.t.Helper()
	many := make([]string, max+1)
	for i := range many {
		many[i] = item(i)
	}
	wantStatus(l.t, l.put("n1", fmt.Sprintf(`{%q:[%s]}`, key, strings.Join(many, ","))), http.StatusUnprocessableEntity)
}
