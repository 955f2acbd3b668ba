package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const planSpec = `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"ns-a"},
	"spec":{"instance":4,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`

func planFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "web.json")
	if err := os.WriteFile(path, []byte(planSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlanOutput(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/plan", 200, `{"results":[
		{"kind":"process","namespace":"ns-a","name":"web","existing":[0],
		 "placements":[{"index":1,"node":"node-2","ports":[{"name":"http","hostPort":31000},{"name":"rpc","hostPort":8899}]},
		               {"index":2,"node":"node-10","ports":[]}],
		 "unplaced":[3,4,5],
		 "reason":{"nodes":3000,"checks":[{"check":"failed constraint idc MAXPER 5","nodes":1800}]},
		 "message":"3,000 nodes: 1,800 failed constraint idc MAXPER 5, 1,150 insufficient memory, 50 port 8899 in use"},
		{"kind":"application","namespace":"defaultGroup","name":"api","existing":[0,1],"placements":[],"unplaced":[]}],
		"skipped":[{"kind":"configmap","namespace":"ns-a","name":"cfg","reason":"configmap objects are not placed"}]}`)
	r := runCLI(t, url, "", "plan", "-f", planFile(t))
	want := dedent(`
		process ns-a/web: 5 instances to place, 1 already placed
		INDEX   NODE      PORTS
		1       node-2    http:31000,rpc:8899
		2       node-10   <none>
		3 instances of process ns-a/web cannot be placed: 3,000 nodes: 1,800 failed constraint idc MAXPER 5, 1,150 insufficient memory, 50 port 8899 in use

		application/api: nothing to place (2 instances already placed)

		configmap ns-a/cfg skipped: configmap objects are not placed
		`)
	if r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
	var ee *ExitError
	if !errors.As(r.err, &ee) || ee.Code != 2 || ee.Message != "" {
		t.Fatalf("err %v, want exit status 2", r.err)
	}
	if body := api.body("POST /v1/plan"); !strings.Contains(body, `"name":"web"`) {
		t.Errorf("sent %q", body)
	}
}

func TestPlanFitsExitsZero(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/plan", 200, `{"results":[{"kind":"process","namespace":"ns-a","name":"web","existing":[],
		"placements":[{"index":0,"node":"node-1","ports":[]}],"unplaced":[]}],"skipped":[]}`)
	r := runCLIOK(t, url, planSpec, "plan", "-f", "-")
	want := dedent(`
		process ns-a/web: 1 instance to place
		INDEX   NODE     PORTS
		0       node-1   <none>
		`)
	if r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
	// -o json prints the server's result as is, and the status still says whether it fits.
	r = runCLI(t, url, planSpec, "plan", "-f", "-", "-o", "json")
	if r.err != nil || !strings.Contains(r.stdout, `"node": "node-1"`) || !strings.Contains(r.stdout, `"skipped": []`) {
		t.Errorf("json: %v\n%s", r.err, r.stdout)
	}
}

func TestPlanErrors(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/plan", 422, `{"error":{"code":422,"reason":"Invalid","message":"the plan stream is invalid: spec.instance: must be greater than 0",
		"details":[{"field":"spec.instance","message":"must be greater than 0"}]}}`)
	path := planFile(t)
	r := runCLI(t, url, "", "plan", "-f", path)
	var ee *ExitError
	if r.err == nil || errors.As(r.err, &ee) || !strings.Contains(r.err.Error(), path+": spec.instance: must be greater than 0") {
		t.Errorf("422: %v", r.err)
	}
	api.json("POST /v1/plan", 503, `{"error":{"code":503,"reason":"Unavailable","message":"the scheduler has not loaded the cluster's nodes and task groups yet"}}`)
	if r := runCLI(t, url, "", "plan", "-f", path); r.err == nil || !strings.Contains(r.err.Error(), "not loaded") {
		t.Errorf("503: %v", r.err)
	}
	for _, args := range [][]string{{"plan"}, {"plan", "-f", path, "-n", "x"}, {"plan", "-f", path, "-o", "name"}} {
		if r := runCLI(t, url, "", args...); r.err == nil {
			t.Errorf("berth %v: no error", args)
		}
	}
}

func TestPlanShowsCards(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/plan", 200, `{"results":[{"kind":"process","namespace":"ns-a","name":"web","existing":[],
		"placements":[{"index":0,"node":"gpu-1","ports":[],"gpus":[{"task":"train","uuid":"GPU-a","index":2,"cores":100,"memoryMiB":40960},
			{"task":"train","uuid":"GPU-b","index":3,"cores":100,"memoryMiB":40960},{"task":"infer","uuid":"GPU-c","index":5,"cores":30,"memoryMiB":768}]},
			{"index":1,"node":"node-1","ports":[]}],"unplaced":[]}],"skipped":[]}`)
	r := runCLI(t, url, planSpec, "plan", "-f", "-")
	want := dedent(`
		process ns-a/web: 2 instances to place
		INDEX   NODE     PORTS    GPUS
		0       gpu-1    <none>   train:gpu2 train:gpu3 infer:gpu5(30%,768MiB)
		1       node-1   <none>   <none>
		`)
	if r.err != nil || r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s(%v)", r.stdout, want, r.err)
	}
}
