package compat

import "testing"

// BCS's scheduler API, route by route, as BCS's clients call it (testdata/bcs.json).
func TestBCSConformance(t *testing.T) {
	b := startBerth(t, "--bcs-cluster-id", "BCS-MESOS-10001")
	runCases(t, b, "testdata/bcs.json", map[string]string{"BCS-ClusterID": "BCS-MESOS-10001"}, nil)
}
