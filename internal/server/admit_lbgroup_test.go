package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Two services of one load-balancer group cannot claim one TCP port, or one HTTP host
// and path; in other groups, or with another port, host or path, they can.
func TestLoadBalancerClaimsAreChecked(t *testing.T) {
	url := newTestServer(t, Config{})
	svc := func(ns, name, group, port string) string {
		return fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"%s","namespace":"%s","labels":{"BCSGROUP":"%s"}},
			"spec":{"selector":{"app":"%s"},"ports":[%s]}}`, name, ns, group, name, port)
	}
	tcp := func(p int) string { return fmt.Sprintf(`{"name":"p","protocol":"tcp","servicePort":%d}`, p) }
	web := func(host, path string) string {
		return fmt.Sprintf(`{"name":"http","protocol":"http","servicePort":80,"domainName":"%s","path":"%s"}`, host, path)
	}
	create := func(ns, body string) response {
		return call(t, http.MethodPost, url+"/v1/namespaces/"+ns+"/services", body)
	}
	wantStatus(t, create("lb-a", svc("lb-a", "db", "ext", tcp(5432))), http.StatusCreated)
	wantStatus(t, create("lb-a", svc("lb-a", "site", "ext,int", web("www.example.com", "/"))), http.StatusCreated)
	cases := []struct {
		name, ns, body string
		code           int
		want           string
	}{
		{"same port, other namespace", "lb-b", svc("lb-b", "db2", "int, ext", tcp(5432)), http.StatusUnprocessableEntity,
			"spec.ports[0].servicePort: TCP port 5432 in load-balancer group ext is service lb-a/db's"},
		{"same port, other group", "lb-b", svc("lb-b", "db3", "int", tcp(5432)), http.StatusCreated, ""},
		{"same host, path as none", "lb-b", svc("lb-b", "www", "int", web("WWW.example.com", "")), http.StatusUnprocessableEntity,
			"HTTP host www.example.com path / in load-balancer group int is service lb-a/site's"},
		{"same host, other path", "lb-b", svc("lb-b", "api", "int", web("www.example.com", "/api")), http.StatusCreated, ""},
		{"udp is not balanced", "lb-b", svc("lb-b", "dns", "ext", `{"name":"p","protocol":"udp","servicePort":5432}`), http.StatusCreated, ""},
	}
	for _, c := range cases {
		r := create(c.ns, c.body)
		if r.code != c.code || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, r.code, r.body, c.code, c.want)
		}
	}
	// A service keeps its own claims when it is updated.
	r := call(t, http.MethodPut, url+"/v1/namespaces/lb-a/services/db", svc("lb-a", "db", "ext", tcp(5432)))
	wantStatus(t, r, http.StatusOK)
	// Within one apply stream, the second claim is refused and nothing is stored.
	r = call(t, http.MethodPost, url+"/v1/apply", svc("lb-c", "x1", "g9", tcp(7000))+"\n"+svc("lb-c", "x2", "g9", tcp(7000)))
	if r.code != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "lb-c/x1") {
		t.Errorf("apply: %d %s", r.code, r.body)
	}
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/lb-c/services/x1", ""), http.StatusNotFound)
}
