package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/compat/deployd"
)

// deployd's stream ports are the TCP ports of load-balanced services: listed, and
// validated against; reading them takes read on services in every namespace.
func TestDeploydPorts(t *testing.T) {
	url := newTestServer(t, Config{})
	svc := func(ns, name, labels, ports string) {
		t.Helper()
		body := fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"%s","namespace":"%s","labels":{%s}},
			"spec":{"selector":{"app":"%s"},"ports":[%s]}}`, name, ns, labels, name, ports)
		wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/"+ns+"/services", body), http.StatusCreated)
	}
	svc("hello", "stream", `"BCSGROUP":"g1"`, `{"name":"p","protocol":"tcp","servicePort":9501,"targetPort":5000},{"name":"w","protocol":"http","servicePort":80,"domainName":"a.example"}`)
	svc("rpc", "db", `"BCSGROUP":"g1"`, `{"name":"p","protocol":"tcp","servicePort":9500}`)
	svc("hello", "inside", ``, `{"name":"p","protocol":"tcp","servicePort":7000}`) // no group: not a stream port

	var ports []deployd.StreamProc
	wantDeployd(t, deploydCall(t, "GET", url+"/api/ports", "", &ports), http.StatusOK, "")
	want := []deployd.StreamProc{{SrcPort: 9500, Proto: "tcp", NameSpace: "rpc", ProcName: "db"},
		{SrcPort: 9501, DstPort: 5000, Proto: "tcp", NameSpace: "hello", ProcName: "stream"}}
	if len(ports) != len(want) || ports[0] != want[0] || ports[1] != want[1] {
		t.Fatalf("ports %+v, want %+v", ports, want)
	}
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", `{"Ports":[7000,8000]}`, nil), http.StatusOK, "null")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", `{"Ports":[9501,8000,9500,9501]}`, nil), http.StatusBadRequest, "Conflicted ports: [9501 9500]")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", `{"Ports":[0]}`, nil), http.StatusBadRequest, "Ports[0]")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", `{"Ports":[70000]}`, nil), http.StatusBadRequest, "Ports[0]")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", `{"ports":"x"}`, nil), http.StatusBadRequest, "Ports")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", `{"Ports":[1],"More":1}`, nil), http.StatusBadRequest, "More")
	many := `{"Ports":[1` + strings.Repeat(",1", 1000) + `]}`
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports?cmd=validate", many, nil), http.StatusBadRequest, "at most 1000")
	wantDeployd(t, deploydCall(t, "POST", url+"/api/ports", `{"Ports":[1]}`, nil), http.StatusBadRequest, "cmd")

	// A token of one namespace learns nothing of the others' ports.
	hello := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: hello}
rules:
  - namespaces: [hello]
    kinds: ["*"]
    verbs: [read, write]
`, "hello", "")
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/ports", ""},
		{http.MethodPost, "/api/ports?cmd=validate", `{"Ports":[9500]}`},
	} {
		if r := callAs(t, "", c.method, url+c.path, c.body, hello); r.code != http.StatusForbidden || strings.Contains(string(r.body), "9500") {
			t.Errorf("namespace token, %s %s: %d %s", c.method, c.path, r.code, r.body)
		}
	}
}
