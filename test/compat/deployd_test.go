package compat

import "testing"

// deployd's API, route by route, as Lain's clients call it (testdata/deployd.json).
func TestDeploydConformance(t *testing.T) {
	b := startBerth(t)
	runCases(t, b, "testdata/deployd.json", nil, map[string]string{"node": b.node(t)})
}
