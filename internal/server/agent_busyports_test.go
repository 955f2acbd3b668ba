package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// An agent sets its node's busy ports; the same list again writes nothing; another
// node's, a bad list and an unknown node are refused.
func TestAgentBusyPorts(t *testing.T) {
	l := newNodeListRoute(t, "busyports")
	body := `{"busyPorts":[{"port":31000,"protocol":"tcp"},{"port":31000,"protocol":"udp","holder":"dnsmasq (pid 9)"}]}`
	l.wantSetOnce(body, `{"busyPorts":[]}`, func(n *v4.Node) {
		if got := fmt.Sprint(n.Status.BusyPorts); got != "[31000/tcp 31000/udp held by dnsmasq (pid 9)]" {
			t.Fatalf("stored %s", got)
		}
	}, func(n *v4.Node) bool { return n.Status.BusyPorts == nil })

	wantStatus(t, l.putAs("n1", "n2", body), http.StatusForbidden)
	r := l.put("n1", `{"busyPorts":[{"port":31000,"protocol":"sctp"},{"port":1,"protocol":"tcp"},{"port":1,"protocol":"tcp"}]}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "busyPorts[0].protocol") || !strings.Contains(string(r.body), "lists 1/tcp twice") {
		t.Errorf("details: %s", r.body)
	}
	l.wantTooMany("busyPorts", v4.MaxBusyPorts, func(i int) string { return fmt.Sprintf(`{"port":%d,"protocol":"tcp"}`, 30000+i) })
	wantStatus(t, l.put("n3", body), http.StatusNotFound)
}
