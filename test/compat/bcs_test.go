package compat

import (
	"encoding/json"
	"net/http"
	"testing"
)

// BCS's scheduler API, route by route, as BCS's clients call it (testdata/bcs.json). The
// steps with ${tenant}'s token call as a user limited to namespace bcs, who must not read
// cluster-wide data (nodes, offers, every namespace's transactions).
func TestBCSConformance(t *testing.T) {
	b := startBerth(t, "--bcs-cluster-id", "BCS-MESOS-10001")
	node, ip := b.node(t), ""
	var n struct {
		Spec struct{ IP string } `json:"spec"`
	}
	if b.get(t, "/v1/nodes/"+node, &n) == 200 {
		ip = n.Spec.IP
	}
	runCases(t, b, "testdata/bcs.json", map[string]string{"BCS-ClusterID": "BCS-MESOS-10001"},
		map[string]string{"node": node, "ip": ip, "tenant": b.namespaceToken(t, "bcs")})
}

// namespaceToken makes a token whose one policy grants everything in namespace ns, and
// nothing outside it.
func (b *berth) namespaceToken(t *testing.T, ns string) string {
	t.Helper()
	policy := `{"kind":"acl-policy","metadata":{"name":"only-` + ns + `"},"rules":[{"namespaces":["` + ns + `"],"kinds":["*"],"verbs":["*"]}]}`
	if status, _, body := b.do(t, http.MethodPut, "/v1/acl/policies/only-"+ns, nil, policy); status != http.StatusOK {
		t.Fatalf("policy: %d %s", status, body)
	}
	status, _, body := b.do(t, http.MethodPost, "/v1/acl/tokens", nil, `{"name":"`+ns+`","policies":["only-`+ns+`"]}`)
	var info struct {
		Secret string `json:"secret"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &info) != nil || info.Secret == "" {
		t.Fatalf("token: %d %s", status, body)
	}
	return info.Secret
}
