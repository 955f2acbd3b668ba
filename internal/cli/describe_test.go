package cli

import (
	"strings"
	"testing"
)

func TestDescribeProcess(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/ns-a/processes/gamesvc", 200, `{"apiVersion":"v4","kind":"process",
		"metadata":{"name":"gamesvc","namespace":"ns-a","labels":{"app":"game","tier":"be"},"resourceVersion":"17","creationTimestamp":"2026-11-22T11:55:00Z"},
		"restartPolicy":{"policy":"OnFailure","interval":5,"backoff":10,"maxtimes":3},
		"killPolicy":{"gracePeriod":10},
		"constraint":{"intersectionItem":[
			{"unionData":[{"name":"hostname","operate":"UNIQUE"}]},
			{"unionData":[{"name":"idc","operate":"MAXPER","type":1,"scalar":{"value":5}}]},
			{"unionData":[{"name":"rack","operate":"CLUSTER","type":4,"set":{"item":["r0","r1"]}},{"name":"zone","operate":"LIKE","type":3,"text":{"value":"z.*"}}]}]},
		"spec":{"instance":2,"template":{"spec":{"processes":[{"procName":"game","startCmd":"./start.sh","user":"game",
			"uris":[{"value":"http://pkg/game.tgz","user":"u","pwd":"hunter2"}],
			"ports":[{"name":"web","hostPort":0,"protocol":"http"}],
			"resources":{"requests":{"cpu":"0.5","memory":"512"}},
			"healthChecks":[{"type":"HTTP","intervalSeconds":10,"timeoutSeconds":5,"consecutiveFailures":3,"http":{"portName":"web","path":"/healthz"}}],
			"env":[{"name":"MODE","value":"prod"}],
			"configmaps":[{"name":"cfg","items":[{"type":"file","dataKey":"conf","keyOrPath":"/etc/game.conf"}]}],
			"secrets":[{"secretName":"creds","items":[{"type":"env","dataKey":"pw","keyOrPath":"DB_PW"}]}]}]}}}}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[
		{"time":"2026-11-22T11:55:00Z","type":"Normal","reason":"Created","kind":"process","namespace":"ns-a","name":"gamesvc","message":"process ns-a/gamesvc created"},
		{"time":"2026-11-22T11:59:30Z","type":"Warning","reason":"InstanceFailed","kind":"process","namespace":"ns-a","name":"gamesvc","message":"exit 1",
		 "count":5,"firstTime":"2026-11-22T11:57:00Z","lastTime":"2026-11-22T11:59:30Z"}]}`)
	r := runCLIOK(t, url, "", "describe", "proc", "gamesvc", "-n", "ns-a")
	wantContains(t, r.stdout,
		"Name:             gamesvc\n",
		"Labels:           app=game\n                  tier=be\n",
		"Created:          2026-11-22T11:55:00Z (5m ago)\n",
		"Instances:        2\n",
		"Restart Policy:   OnFailure (interval 5s, backoff 10s, at most 3 times)\n",
		"Kill Policy:      grace period 10s\n",
		"Constraints:\n  hostname UNIQUE\n  idc MAXPER 5\n  rack CLUSTER [r0 r1] OR zone LIKE z.*\n",
		"  Processes:\n    game:\n",
		"Start:      ./start.sh\n",
		"Package:    http://pkg/game.tgz\n",
		"Port:       web/http, host random\n",
		"Requests:   cpu=0.5 memory=512MB\n",
		"Health Check: HTTP http://:web/healthz every 10s, timeout 5s, 3 failures\n",
		"Env:        MODE=prod\n",
		"ConfigMap:  cfg[conf] as file /etc/game.conf\n",
		"Secret:     creds[pw] as env DB_PW\n",
		"Events:\n  LAST SEEN          TYPE      REASON           MESSAGE\n"+
			"  5m                 Normal    Created          process ns-a/gamesvc created\n"+
			"  30s (x5 over 3m)   Warning   InstanceFailed   exit 1\n",
	)
	if strings.Contains(r.stdout, "hunter2") {
		t.Error("package password printed")
	}
	if got := api.got(); got[1] != "GET /v1/events?kind=process&limit=1000&name=gamesvc&namespace=ns-a" {
		t.Errorf("requests = %v", got)
	}
}

func TestDescribeSecretHidesValues(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/secrets/creds", 200, `{"apiVersion":"v4","kind":"secret",
		"metadata":{"name":"creds","namespace":"defaultGroup"},"type":"Opaque",
		"datas":{"pw":{"content":"c3VwZXJzZWNyZXQ="},"cert":{"path":"/tls","content":"not-base64!"}}}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "secret", "creds")
	want := "Type:             Opaque\nData:\n  cert:           11 bytes, path /tls\n  pw:             11 bytes\nEvents:           <none>\n"
	if !strings.HasSuffix(r.stdout, want) {
		t.Errorf("output =\n%s\nwant suffix\n%s", r.stdout, want)
	}
	if strings.Contains(r.stdout, "c3VwZXJzZWNyZXQ") || strings.Contains(r.stdout, "supersecret") {
		t.Error("secret value printed")
	}
}

func TestDescribeEventsUnavailable(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/configmaps/cfg", 200, `{"apiVersion":"v4","kind":"configmap",
		"metadata":{"name":"cfg","namespace":"defaultGroup"},"datas":{"k":{"type":"file","content":"eHl6"},"r":{"type":"http","content":"http://x/y"}}}`)
	r := runCLIOK(t, url, "", "describe", "cm", "cfg")
	if !strings.Contains(r.stdout, "  k:              file, 3 bytes\n  r:              http http://x/y\n") {
		t.Errorf("output =\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "warning: cannot list events") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestDescribeDaemonset(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/ns-a/daemonsets/logs", 200, `{"apiVersion":"v4","kind":"daemonset",
		"metadata":{"name":"logs","namespace":"ns-a","creationTimestamp":"2026-11-22T11:55:00Z"},
		"restartPolicy":{"policy":"Always"},
		"spec":{"template":{"spec":{"processes":[{"procName":"shipper","startCmd":"./ship"}]}}},
		"status":{"phase":"Abnormal","desired":2,"current":2,"running":1,"upToDate":2,"message":"node node-2 is disabled"}}`)
	api.json("GET /v1/namespaces/ns-a/taskgroups", 200, `{"kind":"List","items":[
		{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"1.logs.ns-a.berth.2","namespace":"ns-a"},
		 "spec":{"owner":{"kind":"daemonset","name":"logs"},"index":1,"node":"node-2","template":{"spec":{}}},"status":{"phase":"Failed"}},
		{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.logs.ns-a.berth.1","namespace":"ns-a"},
		 "spec":{"owner":{"kind":"daemonset","name":"logs"},"index":0,"node":"node-1","template":{"spec":{}},
		   "gpus":[{"task":"shipper","uuid":"GPU-a","index":3,"cores":30,"memoryMiB":4096}]},
		 "status":{"phase":"Running","gpuProblem":"GPU 3 (GPU-a) is unhealthy: XID 79"}},
		{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.other.ns-a.berth.1","namespace":"ns-a"},
		 "spec":{"owner":{"kind":"process","name":"logs"},"index":0,"node":"node-1","template":{"spec":{}}},"status":{"phase":"Running"}}]}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[
		{"time":"2026-11-22T11:55:00Z","type":"Normal","reason":"Scheduled","kind":"daemonset","namespace":"ns-a","name":"logs","message":"node node-1: placed 0.logs.ns-a.berth.1"}]}`)
	r := runCLIOK(t, url, "", "describe", "ds", "logs", "-n", "ns-a")
	wantContains(t, r.stdout,
		"Status:           Abnormal (1/2 nodes running)\n",
		"Nodes:            2 desired, 2 current, 1 running, 2 up to date\n",
		"Message:          node node-2 is disabled\n",
		"Task Groups:\n  0  0.logs.ns-a.berth.1  Running on node-1\n     GPUs shipper:gpu3(30%,4GiB)\n     GPU problem: GPU 3 (GPU-a) is unhealthy: XID 79\n",
		"  1  1.logs.ns-a.berth.2  Failed on node-2\n",
		"Scheduled   node node-1: placed 0.logs.ns-a.berth.1\n",
	)
	if strings.Contains(r.stdout, "0.other") {
		t.Error("a process's task group is not the daemonset's")
	}
}

func TestDescribeProcessInCrashLoop(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/ns-a/processes/crashy", 200, `{"apiVersion":"v4","kind":"process",
		"metadata":{"name":"crashy","namespace":"ns-a","resourceVersion":"17","creationTimestamp":"2026-11-22T11:55:00Z"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}},
		"status":{"phase":"Abnormal","instances":1,"running":0,"message":"instance 0: CrashLoopBackOff, restart 4 at 12:00:40 (task web exited with code 1)",
			"backOff":[{"index":0,"taskgroup":"0.crashy.ns-a.c.1","reason":"CrashLoopBackOff","restartAt":"2026-11-22T12:00:40Z","restart":4,"lastExit":"task web exited with code 1"}]}}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "process", "crashy", "-n", "ns-a")
	want := "Waiting to Restart:\n  0  0.crashy.ns-a.c.1  CrashLoopBackOff: restart 4 in 40s"
	if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "last run: task web exited with code 1") {
		t.Errorf("output lacks %q and the last exit:\n%s", want, r.stdout)
	}
}

func TestDescribeAndGetShowPending(t *testing.T) {
	api, url := newFakeAPI(t)
	obj := `{"apiVersion":"v4","kind":"process",
		"metadata":{"name":"huge","namespace":"ns-a","resourceVersion":"9","creationTimestamp":"2026-11-22T11:55:00Z"},
		"spec":{"instance":2,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}},
		"status":{"phase":"Abnormal","instances":2,"running":0,"message":"2 of 2 instances cannot be placed: 3 nodes: 3 insufficient cpu",
			"pending":{"reason":"Unschedulable","message":"3 nodes: 3 insufficient cpu","check":"resources","instances":2,"indexes":[0,1],
				"since":"2026-11-22T11:59:00Z"}}}`
	api.json("GET /v1/namespaces/ns-a/processes/huge", 200, obj)
	api.json("GET /v1/namespaces/ns-a/processes", 200, `{"kind":"List","items":[`+obj+`]}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "process", "huge", "-n", "ns-a")
	wantContains(t, r.stdout, "Pending:          Unschedulable: 2 instances (0, 1) for 1m0s\n", "Why:              3 nodes: 3 insufficient cpu\n")
	r = runCLIOK(t, url, "", "get", "processes", "-n", "ns-a")
	wantContains(t, r.stdout, "Abnormal,Unschedulable")
}

func TestDescribeServiceShowsEndpoints(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/demo/services/web", 200, `{"apiVersion":"v4","kind":"service",
		"metadata":{"name":"web","namespace":"demo"},
		"spec":{"selector":{"app":"web"},"type":"ClusterIP","ports":[{"name":"http","protocol":"http","servicePort":80}]}}`)
	api.json("GET /v1/namespaces/demo/endpoints/web", 200, `{"apiVersion":"v4","kind":"endpoint",
		"metadata":{"name":"web","namespace":"demo"},
		"eps":[{"networkMode":"BRIDGE","nodeIP":"10.0.0.1","containerIP":"172.17.0.2","node":"n1",
			"targetRef":{"kind":"application","id":"0.web.demo.c.1","name":"web","namespace":"demo","index":0},
			"ports":[{"name":"http","protocol":"http","containerPort":8080,"ip":"172.17.0.2","port":8080}]}],
		"notReady":[{"networkMode":"BRIDGE","nodeIP":"10.0.0.2","containerIP":"172.17.0.3","node":"n2",
			"targetRef":{"kind":"application","id":"1.web.demo.c.1","name":"web","namespace":"demo","index":1},
			"ports":[{"name":"http","protocol":"http","containerPort":8080,"ip":"172.17.0.3","port":8080}],
			"reason":"health check failing: GET /healthz: 503"}]}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "svc", "web", "-n", "demo")
	wantContains(t, r.stdout,
		"Selector:         app=web\n",
		"Endpoints:\n  0.web.demo.c.1 on n1  http=172.17.0.2:8080\n",
		"Not Ready:\n  1.web.demo.c.1 on n2  http=172.17.0.3:8080: health check failing: GET /healthz: 503\n",
	)
}

func TestGetEndpoints(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/demo/endpoints", 200, `{"kind":"List","items":[{"apiVersion":"v4","kind":"endpoint",
		"metadata":{"name":"web","namespace":"demo"},"vip":"10.254.0.7",
		"eps":[{"targetRef":{"id":"0.web"},"ports":[{"name":"http","ip":"172.17.0.2","port":8080}]},
			{"targetRef":{"id":"1.web"},"ports":[{"name":"http","ip":"172.17.0.3","port":8080}]}],
		"notReady":[{"targetRef":{"id":"2.web"},"reason":"Staging"}]}]}`)
	r := runCLIOK(t, url, "", "get", "endpoints", "-n", "demo")
	wantContains(t, r.stdout, "VIP", "NOT READY", "10.254.0.7", "172.17.0.2:8080,172.17.0.3:8080")
}

// A container's pull policy and pull secrets are described (names only: their content is
// the secret's), and a task's pull in progress is its message.
func TestDescribePullSecretsAndProgress(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/ns-a/applications/web", 200, `{"apiVersion":"v4","kind":"application",
		"metadata":{"name":"web","namespace":"ns-a","creationTimestamp":"2026-11-22T11:55:00Z"},
		"spec":{"instance":1,"template":{"spec":{"containers":[{"name":"web","image":"r.local:5000/web:1","imagePullPolicy":"Always",
			"imagePullSecrets":[{"name":"regcred"},{"name":"hub"}]}]}}}}`)
	api.json("GET /v1/namespaces/ns-a/taskgroups", 200, `{"kind":"List","items":[]}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "app", "web", "-n", "ns-a")
	wantContains(t, r.stdout, "Image:      r.local:5000/web:1\n", "Pull Policy: Always\n", "Pull Secrets: regcred, hub\n")

	api.json("GET /v1/namespaces/ns-a/taskgroups/0.web.ns-a.berth.1", 200, `{"apiVersion":"v4","kind":"taskgroup",
		"metadata":{"name":"0.web.ns-a.berth.1","namespace":"ns-a"},"spec":{"owner":{"kind":"application","name":"web"},"node":"n1","template":{"spec":{}}},
		"status":{"phase":"Starting","tasks":[{"name":"web","status":"Starting","message":"pulling image r.local:5000/web:1: 45% (12.0 MiB/27.0 MiB, 1/3 layers)"}]}}`)
	r = runCLIOK(t, url, "", "describe", "taskgroup", "0.web.ns-a.berth.1", "-n", "ns-a")
	wantContains(t, r.stdout, "Message:      pulling image r.local:5000/web:1: 45% (12.0 MiB/27.0 MiB, 1/3 layers)\n")
}
