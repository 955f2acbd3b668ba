package cli

import (
	"strings"
	"testing"
)

func TestDescribeTaskGroup(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string // after "describe", "tg"
		path   string   // the object's route
		tg     string
		want   []string
		unwant []string
	}{{
		name: "a running container on a bridge, with ports, cards and passing checks",
		args: []string{"ns-a/0.web.ns-a.berth.1"},
		path: "GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.berth.1",
		tg: `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.web.ns-a.berth.1","namespace":"ns-a","creationTimestamp":"2026-11-22T11:00:00Z"},
			"spec":{"owner":{"kind":"application","name":"web"},"index":0,"node":"node-1",
			  "resources":{"cpu":1.5,"memoryMB":2048,"diskMB":0},
			  "ports":[{"name":"http","hostPort":31000,"protocol":"tcp","random":true},{"name":"admin","hostPort":9090,"protocol":"tcp"}],
			  "gpus":[{"task":"web","uuid":"GPU-a","index":2,"cores":100,"memoryMiB":40960},{"task":"sidecar","uuid":"GPU-b","index":5,"cores":30,"memoryMiB":4096}],
			  "template":{"spec":{"containers":[
			    {"name":"web","image":"nginx","ports":[{"name":"http","containerPort":8080,"hostPort":0,"protocol":"tcp"},{"name":"admin","containerPort":9090,"hostPort":9090,"protocol":"tcp"}]},
			    {"name":"sidecar","image":"envoy","ports":[{"name":"stats","containerPort":15000,"hostPort":-1,"protocol":"tcp"}]}]}}},
			"status":{"phase":"Running","hostIP":"10.0.0.1","healthy":true,"startedAt":"2026-11-22T11:58:00Z",
			  "remote":{"healthy":true,"since":"2026-11-22T11:59:00Z"},
			  "tasks":[{"name":"web","status":"Running","healthy":true,"info":{"ID":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","StartAt":"2026-11-22T11:58:00Z","IPAddress":"10.88.0.2","ExitCode":0}},
			    {"name":"sidecar","status":"Running","role":"sidecar","ready":false,"readyMessage":"connection refused","info":{"IPAddress":"10.88.0.2","ExitCode":0}}]}}`,
		want: []string{
			"Owner:            application/web (instance 0)\n",
			"Node:             node-1 (10.0.0.1)\n",
			"Status:           Running\n",
			"Started:          2026-11-22T11:58:00Z (2m ago)\n",
			"IPs:              10.88.0.2\n",
			"Ports:\n  NAME    TASK      CONTAINER PORT   HOST PORT        PROTOCOL\n" +
				"  http    web       8080             31000 (random)   tcp\n" +
				"  admin   web       9090             9090             tcp\n" +
				"  stats   sidecar   15000            -                tcp\n",
			"Health:           healthy\n",
			"Remote Checks:    passing for 60s\n",
			"Restarts:         0\n",
			"Resources:        cpu 1.5, memory 2GB, disk 0MB\n",
			"GPUs:\n  TASK      CARD   UUID    SHARE\n  web       gpu2   GPU-a   whole card\n  sidecar   gpu5   GPU-b   30% of the cores, 4GiB\n",
			"Tasks:\n  web:\n    State:        Running (id 0123456789ab)\n    Started:      2026-11-22T11:58:00Z (2m ago)\n    Health:       healthy\n",
			"  sidecar:\n    State:        Running\n    Role:         sidecar\n    Readiness:    not ready: connection refused\n",
			"Template:\n",
		},
		unwant: []string{"Exit Code", "Reason:", "Finished:", "GPU Problem"},
	}, {
		name: "a failed process: exit code, reason, health, restarts, the ports taken",
		args: []string{"1.game.ns-b.berth.1", "-n", "ns-b"},
		path: "GET /v1/namespaces/ns-b/taskgroups/1.game.ns-b.berth.1",
		tg: `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"1.game.ns-b.berth.1","namespace":"ns-b"},
			"spec":{"owner":{"kind":"process","name":"game"},"index":1,"node":"node-2","desired":"Stopped",
			  "reschedTimes":4,"lastRescheduled":"2026-11-22T11:50:00Z","crashLoops":2,
			  "recentRestarts":["2026-11-22T10:00:00Z","2026-11-22T11:40:00Z","2026-11-22T11:50:00Z"],
			  "ports":[{"name":"web","hostPort":31001,"protocol":"http"}],
			  "resources":{"cpu":0.51,"memoryMB":192,"diskMB":64},"overhead":{"cpu":0.01,"memoryMB":64,"diskMB":64},
			  "template":{"spec":{"processes":[{"procName":"game","startCmd":"./start","ports":[{"name":"web","hostPort":0,"protocol":"http"}]}]}}},
			"status":{"phase":"Failed","hostIP":"10.0.0.2","reason":"PortConflict","message":"host port 31001 is taken",
			  "portsTaken":[{"port":31001,"protocol":"tcp","holder":"nginx (pid 812)"}],
			  "healthy":false,"healthKilled":true,"gpuProblem":"GPU 3 (GPU-c) is unhealthy: XID 79",
			  "startedAt":"2026-11-22T11:50:00Z","finishedAt":"2026-11-22T11:55:00Z",
			  "remote":{"healthy":false,"message":"GET http://10.0.0.2:31001/: 503","since":"2026-11-22T11:54:00Z"},
			  "tasks":[{"name":"game","status":"Failed","message":"exited with 137","healthy":false,"consecutiveFailures":3,"healthMessage":"connection refused",
			    "info":{"Pid":4242,"ID":"ns-b.1.game.berth.1.game","StartAt":"2026-11-22T11:50:00Z","FinishAt":"2026-11-22T11:55:00Z","ExitCode":137,"OOMKilled":true}}]}}`,
		want: []string{
			"Owner:            process/game (instance 1)\n",
			"Status:           Failed (asked to stop)\n",
			"Reason:           PortConflict\n",
			"Message:          host port 31001 is taken\n",
			"Ports Taken:      31001/tcp held by nginx (pid 812)\n",
			"Finished:         2026-11-22T11:55:00Z (5m ago)\n",
			"IPs:              10.0.0.2 (host)\n",
			"  web    game   -                31001       http\n",
			"Health:           unhealthy; killed after failing its health checks\n",
			"Remote Checks:    failing: GET http://10.0.0.2:31001/: 503 for 6m\n",
			"Restarts:         4 (last 10m ago), 2 in the last 30m, 2 crash loops\n",
			"Resources:        cpu 0.51, memory 192MB, disk 64MB\nOf Which:         the executor's overhead: cpu 0.01, memory 64MB, disk 64MB\n",
			"GPUs:             <none>\nGPU Problem:      GPU 3 (GPU-c) is unhealthy: XID 79\n",
			"  game:\n    State:        Failed (pid 4242, id ns-b.1.game.berth.1.game)\n",
			"    Exit Code:    137\n    Reason:       OOMKilled\n",
			"    Health:       unhealthy (3 failures in a row): connection refused\n",
			"    Message:      exited with 137\n",
		},
	}, {
		name: "a task group not started yet",
		args: []string{"0.new.ns-a.berth.1", "-n", "ns-a"},
		path: "GET /v1/namespaces/ns-a/taskgroups/0.new.ns-a.berth.1",
		tg: `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.new.ns-a.berth.1","namespace":"ns-a"},
			"spec":{"owner":{"kind":"application","name":"new"},"index":0,"node":"node-1","template":{"spec":{"processes":[{"procName":"p","startCmd":"./p"}]}}},
			"status":{}}`,
		want: []string{
			"Status:           <none>\n", "IPs:              <none>\n", "Ports:            <none>\n",
			"Health:           unknown (no local checks, or none answered yet)\n", "Tasks:            <none>\n",
		},
		unwant: []string{"Started:", "Remote Checks"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			api, url := newFakeAPI(t)
			api.json(c.path, 200, c.tg)
			api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
			r := runCLIOK(t, url, "", append([]string{"describe", "tg"}, c.args...)...)
			wantContains(t, r.stdout, c.want...)
			for _, u := range c.unwant {
				if strings.Contains(r.stdout, u) {
					t.Errorf("has %q:\n%s", u, r.stdout)
				}
			}
			if got := api.got(); len(got) < 1 || !strings.HasPrefix(got[0], c.path) {
				t.Errorf("requests = %v", got)
			}
		})
	}
}
