package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const nodeN1 = `{"apiVersion":"v4","kind":"node","metadata":{"name":"node-1","labels":{"zone":"a"},"resourceVersion":"12","creationTimestamp":"2026-11-22T11:00:00Z"},
	"spec":{"hostname":"node-1","ip":"10.0.0.1","capacity":{"cpu":8,"memoryMB":16384,"diskMB":100000},
	"allocatable":{"cpu":7.5,"memoryMB":15000,"diskMB":512,"extended":{"nvidia.com/gpu":2}},
	"portRanges":[{"begin":31000,"end":32000}],
	"attributes":{"text":{"rack":"r1"},"set":{"zone":["a","b"]}},
	"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"},{"key":"gpu","value":"yes","effect":"NoSchedule"}],
	"gpus":[{"uuid":"GPU-a","index":0,"minor":0,"model":"A100","memoryMiB":40960,"numaNode":0,"links":[{"uuid":"GPU-b","level":"nvlink"}]},
		{"uuid":"GPU-b","index":1,"minor":1,"model":"A100","memoryMiB":40960,"numaNode":-1,"mig":true,"unhealthy":"XID 79","links":[{"uuid":"GPU-a","level":"nvlink"}]}]},
	"status":{"phase":"Ready","lastHeartbeat":"2026-11-22T11:59:55Z","agentVersion":"v0.1.0"}}`

const nodeN2 = `{"apiVersion":"v4","kind":"node","metadata":{"name":"node-2","resourceVersion":"13","creationTimestamp":"2026-11-20T12:00:00Z"},
	"spec":{"hostname":"node-2","capacity":{"cpu":4},"allocatable":{"cpu":4,"memoryMB":2048,"diskMB":1048576},"disabled":true},
	"status":{"phase":"NotReady"}}`

func TestNodesTable(t *testing.T) {
	api, url := newFakeAPI(t)
	list := `{"kind":"List","resourceVersion":"20","items":[` + nodeN1 + `,` + nodeN2 + `]}`
	api.json("GET /v1/nodes", 200, list)
	want := dedent(`
		NAME     STATUS                        IP         CPU   MEMORY   DISK    TAINTS   AGE
		node-1   Ready                         10.0.0.1   7.5   14.6GB   512MB   2        60m
		node-2   NotReady,SchedulingDisabled   <none>     4     2GB      1TB     0        2d
		`)
	for _, args := range [][]string{{"nodes"}, {"get", "nodes"}, {"get", "no", "-A"}} {
		r := runCLIOK(t, url, "", args...)
		if r.stdout != want {
			t.Errorf("berth %v =\n%s\nwant\n%s", args, r.stdout, want)
		}
	}
	api.json("GET /v1/nodes", 200, `{"kind":"List","items":[]}`)
	if r := runCLI(t, url, "", "nodes"); r.err != nil || r.stderr != "No nodes found.\n" {
		t.Errorf("empty: %q %v", r.stderr, r.err)
	}
	if r := runCLI(t, url, "", "get", "nodes"); r.err != nil || r.stderr != "No nodes found.\n" {
		t.Errorf("empty get: %q %v", r.stderr, r.err)
	}
}

func TestGetAndDescribeNode(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/nodes/node-1", 200, nodeN1)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[
		{"time":"2026-11-22T11:00:00Z","type":"Normal","reason":"Registered","kind":"node","name":"node-1","message":"node node-1 registered"}]}`)
	r := runCLIOK(t, url, "", "get", "node", "node-1", "-o", "yaml")
	if !strings.HasPrefix(r.stdout, "apiVersion: v4\nkind: node\nmetadata:\n  name: node-1\n") {
		t.Errorf("yaml:\n%s", r.stdout)
	}
	r = runCLIOK(t, url, "", "describe", "node", "node-1")
	wantContains(t, r.stdout,
		"Name:             node-1\nKind:             node\n",
		"Hostname:         node-1\n",
		"IP:               10.0.0.1\n",
		"Status:           Ready (last heartbeat 2026-11-22T11:59:55Z (5s ago), agent v0.1.0)\n",
		"Capacity:         cpu 8, memory 16GB, disk 97.7GB\n",
		"Allocatable:      cpu 7.5, memory 14.6GB, disk 512MB, nvidia.com/gpu 2\n",
		"Port Ranges:      31000-32000\n",
		"Attributes:\n  rack:           r1 (text)\n  zone:           a,b (set)\n",
		"Taints:           dedicated=db:NoSchedule\n                  gpu=yes:NoSchedule\n",
		"GPUs:\n  0  GPU-a  A100  40GiB, NUMA 0, links 1:nvlink\n  1  GPU-b  A100  40GiB, MIG, UNHEALTHY: XID 79, links 0:nvlink\n",
		"Registered   node node-1 registered\n",
	)
	if strings.Contains(r.stdout, "Namespace:") {
		t.Errorf("describe shows a namespace for a node:\n%s", r.stdout)
	}
	if got := api.got(); got[len(got)-1] != "GET /v1/events?kind=node&limit=1000&name=node-1" {
		t.Errorf("requests %v", got)
	}
}

func TestDescribeNodeShowsMeasuredUsage(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/nodes/node-1", 200, nodeN1)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	api.json("GET /v1/nodes/node-1/usage", 200, `{"time":"2026-11-22T12:00:00Z","node":"node-1","windowSeconds":2,
		"host":{"cpuCores":1.254,"cpuSeconds":900,"memoryBytes":2147483648,"memoryTotalBytes":17179869184},
		"instances":{"count":3,"tasks":4,"unmeasured":1,"cpuCores":0.5,"memoryBytes":536870912},
		"allocatable":{"cpu":7.5,"memoryMB":14950},"reserved":{"cpu":2,"memoryMB":1024,"taskGroups":3,"overheadCPU":0.03,"overheadMemoryMB":192}}`)
	r := runCLIOK(t, url, "", "describe", "node", "node-1")
	wantContains(t, r.stdout, "Measured Usage:\n",
		"  CPU:            host 1.25, instances 0.5 cores (over 2.0s); 7.5 allocatable, 2 reserved\n",
		"  Memory:         host 2GB of 16GB in use, instances 512MB; 14.6GB allocatable, 1GB reserved\n",
		"  Instances:      3 instances running, 4 tasks measured, 1 not measurable\n",
		"  Overhead:       0.03 cores and 192MB of the reserved are the executors'\n")
}

// patchBody decodes the last PATCH body the fake server got.
func patchBody(t *testing.T, api *fakeAPI) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(api.body("PATCH /v1/nodes/node-1")), &m); err != nil {
		t.Fatalf("patch body %q: %v", api.body("PATCH /v1/nodes/node-1"), err)
	}
	return m
}

func TestNodePatchCommands(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("PATCH /v1/nodes/node-1", 200, nodeN1)
	api.json("GET /v1/nodes/node-1", 200, nodeN1)
	tests := []struct {
		args []string
		out  string
		want string // the patch, as JSON
	}{
		{[]string{"node", "label", "node-1", "k=v", "gone-", "empty="}, "node/node-1 labeled\n",
			`{"metadata":{"labels":{"empty":"","gone":null,"k":"v"}}}`},
		{[]string{"node", "attr", "node-1", "--text", "rack=r2", "--scalar", "cpus=8", "--set", "zone=a,b", "--remove", "old"},
			"node/node-1 attributes updated\n",
			`{"spec":{"attributes":{"scalar":{"cpus":8,"old":null,"rack":null,"zone":null},
				"set":{"cpus":null,"old":null,"rack":null,"zone":["a","b"]},
				"text":{"cpus":null,"old":null,"rack":"r2","zone":null}}}}`},
		{[]string{"node", "disable", "node-1"}, "node/node-1 disabled\n", `{"spec":{"disabled":true}}`},
		{[]string{"node", "enable", "node-1"}, "node/node-1 enabled\n", `{"spec":{"disabled":false}}`},
		// Taints are read, edited and written back whole with the read resourceVersion.
		{[]string{"node", "taint", "node-1", "gpu-", "dedicated=web:NoSchedule", "new=1:NoSchedule"}, "node/node-1 tainted\n",
			`{"metadata":{"resourceVersion":"12"},"spec":{"taints":[
				{"key":"dedicated","value":"web","effect":"NoSchedule"},{"key":"new","value":"1","effect":"NoSchedule"}]}}`},
		{[]string{"node", "taint", "node-1", "gpu-"}, "node/node-1 untainted\n",
			`{"metadata":{"resourceVersion":"12"},"spec":{"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}]}}`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			r := runCLIOK(t, url, "", tt.args...)
			if r.stdout != tt.out {
				t.Errorf("stdout %q, want %q", r.stdout, tt.out)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if got := patchBody(t, api); !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Errorf("patch %s, want %s", g, tt.want)
			}
		})
	}

	for _, args := range [][]string{
		{"node", "label", "node-1", "novalue"},
		{"node", "taint", "node-1", "k=v"},
		{"node", "taint", "node-1", "k:NoSchedule"},
		{"node", "attr", "node-1"},
		{"node", "attr", "node-1", "--scalar", "cpus=many"},
		{"node", "attr", "node-1", "--set", "zone=a,,b"},
	} {
		if r := runCLI(t, url, "", args...); r.err == nil {
			t.Errorf("berth %v: no error", args)
		}
	}

	// A 422 from the server is shown with its details.
	api.json("PATCH /v1/nodes/node-1", 422, `{"error":{"code":422,"reason":"Invalid","message":"node node-1 is invalid: spec.taints[0].effect: must be one of \"NoSchedule\"",
		"details":[{"field":"spec.taints[0].effect","message":"must be one of \"NoSchedule\""}]}}`)
	r := runCLI(t, url, "", "node", "taint", "node-1", "k=v:NoExecute")
	if r.err == nil || !strings.Contains(r.err.Error(), "spec.taints[0].effect") {
		t.Errorf("422: %v", r.err)
	}
}
