package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A service of a load-balancer group is refused (422, naming the field and the node) on a
// TCP port the group's nodes already use: their agent's port, the group's HTTP port, or
// their port ranges. Other groups' nodes, and HTTP and UDP ports, do not count.
func TestLoadBalancerNodePortsAreRefused(t *testing.T) {
	url := newTestServer(t, Config{})
	node := strings.Replace(nodeJSON("n1", `,"portRanges":[{"begin":30000,"end":30099}],
		"attributes":{"text":{"lb.group":"g1"},"scalar":{"lb.httpPort":8080}}`),
		`"status":{"phase":"Ready"}`, `"status":{"phase":"Ready","agentAddress":"10.0.0.1:7471",
		"busyPorts":[{"port":9000,"protocol":"tcp","holder":"nginx (pid 7)"},{"port":9001,"protocol":"udp"}]}`, 1)
	wantStatus(t, callAs(t, "n1", http.MethodPost, url+"/v1/agent/register", node, ""), http.StatusCreated)
	other := strings.Replace(nodeJSON("n2", `,"attributes":{"text":{"lb.group":"g2"}}`), "10.0.0.1", "10.0.0.2", 1)
	wantStatus(t, callAs(t, "n2", http.MethodPost, url+"/v1/agent/register", other, ""), http.StatusCreated)

	svc := func(name, group, port string) string {
		return fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"%s","namespace":"lbn","labels":{"BCSGROUP":"%s"}},
			"spec":{"selector":{"app":"x"},"ports":[%s]}}`, name, group, port)
	}
	tcp := func(p int) string { return fmt.Sprintf(`{"name":"p","protocol":"tcp","servicePort":%d}`, p) }
	cases := []struct {
		name, body string
		code       int
		want       string
	}{
		{"agent port", svc("a", "g1", tcp(7471)), http.StatusUnprocessableEntity,
			"spec.ports[0].servicePort: TCP port 7471 in load-balancer group g1 is its agent's port on node n1"},
		{"http port", svc("b", "g1", tcp(8080)), http.StatusUnprocessableEntity, "is the group's HTTP port"},
		{"port range", svc("c", "g2,g1", tcp(30050)), http.StatusUnprocessableEntity, "in the port range 30000-30099 berth gives to tasks' host ports on node n1"},
		{"busy port", svc("i", "g1", tcp(9000)), http.StatusUnprocessableEntity, "is busy (9000/tcp held by nginx (pid 7)"},
		{"busy udp port", svc("j", "g1", tcp(9001)), http.StatusCreated, ""},
		{"another group's node", svc("d", "g2", tcp(7471)), http.StatusCreated, ""},
		{"free port", svc("e", "g1", tcp(5432)), http.StatusCreated, ""},
		{"http service", svc("f", "g1", `{"name":"h","protocol":"http","servicePort":8080,"domainName":"f.example.com"}`), http.StatusCreated, ""},
		{"udp", svc("g", "g1", `{"name":"u","protocol":"udp","servicePort":7471}`), http.StatusCreated, ""},
	}
	for _, c := range cases {
		r := call(t, http.MethodPost, url+"/v1/namespaces/lbn/services", c.body)
		if r.code != c.code || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, r.code, r.body, c.code, c.want)
		}
	}
	// Apply is held to the same.
	if r := call(t, http.MethodPost, url+"/v1/apply", svc("h", "g1", tcp(30000))); r.code != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "spec.ports[0].servicePort") {
		t.Errorf("apply: %d %s", r.code, r.body)
	}
}
