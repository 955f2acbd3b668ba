package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// An agent sets its node's busy ports; the same list again writes nothing; another
// node's, a bad list and an unknown node are refused.
func TestAgentBusyPorts(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	put := func(node, body string) response {
		return callAs(t, node, http.MethodPut, url+"/v1/agent/nodes/"+node+"/busyports", body, "")
	}
	stored := func() []v4.BusyPort {
		t.Helper()
		n, err := testStore.Get(context.Background(), v4.KindNode, "", "n1")
		if err != nil {
			t.Fatal(err)
		}
		return n.(*v4.Node).Status.BusyPorts
	}
	body := `{"busyPorts":[{"port":31000,"protocol":"tcp"},{"port":31000,"protocol":"udp","holder":"dnsmasq (pid 9)"}]}`
	wantStatus(t, put("n1", body), http.StatusNoContent)
	if got := fmt.Sprint(stored()); got != "[31000/tcp 31000/udp held by dnsmasq (pid 9)]" {
		t.Fatalf("stored %s", got)
	}
	before := revision(t, context.Background())
	wantStatus(t, put("n1", body), http.StatusNoContent)
	if after := revision(t, context.Background()); after != before {
		t.Errorf("the same list moved the revision from %d to %d", before, after)
	}
	wantStatus(t, put("n1", `{"busyPorts":[]}`), http.StatusNoContent)
	if got := stored(); got != nil {
		t.Errorf("cleared list stored as %v", got)
	}

	r := callAs(t, "n1", http.MethodPut, url+"/v1/agent/nodes/n2/busyports", body, "")
	wantStatus(t, r, http.StatusForbidden)
	r = put("n1", `{"busyPorts":[{"port":31000,"protocol":"sctp"},{"port":1,"protocol":"tcp"},{"port":1,"protocol":"tcp"}]}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "busyPorts[0].protocol") || !strings.Contains(string(r.body), "lists 1/tcp twice") {
		t.Errorf("details: %s", r.body)
	}
	many := make([]string, v4.MaxBusyPorts+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"port":%d,"protocol":"tcp"}`, 30000+i)
	}
	wantStatus(t, put("n1", `{"busyPorts":[`+strings.Join(many, ",")+`]}`), http.StatusUnprocessableEntity)
	wantStatus(t, put("n3", body), http.StatusNotFound)
}
