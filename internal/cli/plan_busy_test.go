package cli

import "testing"

// A placement whose random ports passed over ports other programs hold says which.
func TestPlanShowsPassedOverPorts(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/plan", 200, `{"results":[{"kind":"process","namespace":"ns-a","name":"web","existing":[],
		"placements":[{"index":0,"node":"node-1","ports":[{"name":"http","hostPort":31002,"random":true}],"passedOver":[31000,31001]},
		              {"index":1,"node":"node-2","ports":[{"name":"http","hostPort":31000,"random":true}]}],"unplaced":[]}],"skipped":[]}`)
	r := runCLI(t, url, "", "plan", "-f", planFile(t))
	want := dedent(`
		process ns-a/web: 2 instances to place
		INDEX   NODE     PORTS
		0       node-1   http:31002
		1       node-2   http:31000
		instance 0 on node-1 passes over ports other programs hold there: 31000,31001
		`)
	if r.err != nil || r.stdout != want {
		t.Errorf("err %v stdout =\n%s\nwant\n%s", r.err, r.stdout, want)
	}
}
