package compat

import "testing"

// BCS's scheduler API, route by route, as BCS's clients call it (testdata/bcs.json).
func TestBCSConformance(t *testing.T) {
	b := startBerth(t, "--bcs-cluster-id", "BCS-MESOS-10001")
	node, ip := b.node(t), ""
	var n struct {
		Spec struct{ IP string } `json:"spec"`
	}
	if b.get(t, "/v1/nodes/"+node, &n) == 200 {
		ip = n.Spec.IP
	}
	runCases(t, b, "testdata/bcs.json", map[string]string{"BCS-ClusterID": "BCS-MESOS-10001"}, map[string]string{"node": node, "ip": ip})
}
