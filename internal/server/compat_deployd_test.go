package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/deployd"
)

// deployd's sample pod group, as its clients send it (Go field names).
const deploydPodGroup = `{"Name":"hello.web.web","Namespace":"hello","NumInstances":2,"RestartPolicy":1,
 "Pod":{"Name":"hello.web.web","Namespace":"hello","Annotation":"{}","Labels":{"team":"a"},
  "Filters":["constraint:node!=node-9"],"KillTimeout":30,"SetupTime":20,
  "HealthConfig":{"cmd":"test -f /ready","options":{"interval":5,"timeout":2,"retries":4}},
  "Containers":[{"Image":"training/webapp","Command":["python","app.py"],"Env":["MODE=prod"],"Expose":5000,"CpuLimit":1,"MemoryLimit":536870912}],
  "Dependencies":[{"PodName":"rpc.portal","Policy":1}]}}`

const deploydDependency = `{"Name":"rpc.portal","Namespace":"rpc","Containers":[{"Image":"portal","Command":["portal"],"MemoryLimit":67108864}]}`

// deploydCall calls deployd's API and decodes the JSON answer into out (when not nil).
func deploydCall(t *testing.T, method, url, body string, out any) response {
	t.Helper()
	r := callAs(t, "", method, url, body, "")
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, r.body)
		}
	}
	return r
}

func wantDeployd(t *testing.T, r response, status int, part string) {
	t.Helper()
	if r.code != status || !strings.Contains(string(r.body), part) {
		t.Fatalf("HTTP %d %s, want %d with %q", r.code, r.body, status, part)
	}
}

// A pod group's life through deployd's API: create (202 and check_url), read back with
// its instances, scale, respec, refusals; it is a deployment rolled one at a time.
func TestDeploydPodGroups(t *testing.T) {
	url := newTestServer(t, Config{}) + "/api"
	wantDeployd(t, deploydCall(t, "POST", url+"/depends", deploydDependency, nil), http.StatusAccepted, `"check_url":"/api/depends?name=rpc.portal"`)
	r := deploydCall(t, "POST", url+"/podgroups", deploydPodGroup, nil)
	wantDeployd(t, r, http.StatusAccepted, `"check_url":"/api/podgroups?name=hello.web.web"`)
	wantDeployd(t, deploydCall(t, "POST", url+"/podgroups", deploydPodGroup, nil), http.StatusMethodNotAllowed, "already exists")

	d := getDeployment(t, "hello", "hello-web-web")
	c := d.Spec.Template.Spec.Containers[0]
	if d.Spec.Instance != 2 || d.RestartPolicy.Policy != v4.RestartAlways || d.KillPolicy.GracePeriod != 30 ||
		d.Spec.Strategy.RollingUpdate.RollingOrder != v4.RollingDeleteFirst || d.Metadata.Annotations[deployd.NameAnnotation] != "hello.web.web" ||
		c.Image != "training/webapp" || c.Command != "python" || len(c.Args) != 1 || c.Env[0] != (v4.EnvVar{Name: "MODE", Value: "prod"}) ||
		c.Resources.Limits.CPU != "0.5" || c.Resources.Limits.Memory != "512" || c.Ports[0].ContainerPort != 5000 ||
		c.HealthChecks[0].Command.Value != "test -f /ready" || c.HealthChecks[0].IntervalSeconds != 10 || c.HealthChecks[0].ConsecutiveFailures != 4 ||
		c.HealthChecks[0].GracePeriodSeconds != 20 || d.Constraint.IntersectionItem[0].UnionData[0].Operate != v4.OpUnlike ||
		d.Spec.Template.Spec.Dependencies[0] != (v4.DependencyRef{Name: "rpc-portal", Namespace: deployd.Namespace, Policy: "node"}) {
		t.Fatalf("deployment of the pod group: %+v\ncontainer %+v", d, c)
	}

	putTaskGroup(t, "hello", "1.hello-web-web-v1.hello.c.2", "node-1", func(tg *v4.TaskGroup) {
		tg.Spec.Owner, tg.Spec.Index = v4.OwnerRef{Kind: v4.KindApplication, Name: "hello-web-web-v1"}, 1
		tg.Spec.Ports = []v4.AllocatedPort{{Name: "expose", HostPort: 31005}}
		tg.Spec.Template.Spec = d.Spec.Template.Spec
		tg.Status = v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1",
			Tasks: []v4.TaskStatus{{Name: "c0", Status: v4.StatusRunning, Info: v4.ContainerInfo{ID: "abc", Name: "hello-web-web-1", Status: "running", Pid: 42, IPAddress: "172.17.0.2"}}}}
	})
	var pg deployd.PodGroupWithSpec
	wantDeployd(t, deploydCall(t, "GET", url+"/podgroups?name=hello.web.web", "", &pg), http.StatusOK, "")
	back := pg.Spec.Pod.Containers[0]
	if pg.Spec.Name != "hello.web.web" || pg.Spec.Namespace != "hello" || pg.Spec.NumInstances != 2 || pg.Spec.RestartPolicy != 1 ||
		back.Image != "training/webapp" || strings.Join(back.Command, " ") != "python app.py" || back.Expose != 5000 || back.CpuLimit != 1 ||
		back.MemoryLimit != 536870912 || pg.Spec.Pod.HealthConfig.Cmd != "test -f /ready" || pg.Spec.Pod.Filters[0] != "constraint:node!=node-9" ||
		pg.Spec.Pod.Dependencies[0] != (deployd.Dependency{PodName: "rpc.portal", Policy: 1}) {
		t.Fatalf("pod group spec read back: %+v", pg.Spec)
	}
	if len(pg.Pods) != 1 || pg.Pods[0].InstanceNo != 2 || pg.Pods[0].State != 2 || pg.Pods[0].Containers[0].NodePort != 31005 ||
		pg.Pods[0].Containers[0].ContainerIp != "172.17.0.2" || pg.Pods[0].Containers[0].Id != "abc" {
		t.Fatalf("pods: %+v", pg.Pods)
	}
	// Lain's console reads Runtime.Name and Runtime.State.Running (docker inspect's keys).
	if rt := pg.Pods[0].Containers[0].Runtime; rt == nil || rt.Name != "/hello-web-web-1" || !rt.State.Running || rt.State.Pid != 42 ||
		rt.Node.Name != "node-1" || rt.NetworkSettings.IPAddress != "172.17.0.2" || rt.Config.Image != "training/webapp" {
		t.Fatalf("runtime: %+v", rt)
	}

	wantDeployd(t, deploydCall(t, "PATCH", url+"/podgroups?name=hello.web.web&cmd=replica&num_instances=3&restart_policy=never", "", nil), http.StatusAccepted, "check_url")
	if d := getDeployment(t, "hello", "hello-web-web"); d.Spec.Instance != 3 || d.RestartPolicy.Policy != v4.RestartNever {
		t.Fatalf("after replica: %d %+v", d.Spec.Instance, d.RestartPolicy)
	}
	respec := `{"Name":"hello.web.web","Namespace":"hello","Containers":[{"Image":"training/webapp:2","Command":["python","app.py"]}],"Dependencies":[{"PodName":"rpc.portal"}]}`
	wantDeployd(t, deploydCall(t, "PATCH", url+"/podgroups?name=hello.web.web&cmd=spec", respec, nil), http.StatusAccepted, "upgrading")
	if c := getDeployment(t, "hello", "hello-web-web").Spec.Template.Spec.Containers[0]; c.Image != "training/webapp:2" || c.Resources.Limits.Memory != "512" {
		t.Fatalf("after spec: %+v (resources kept when the new spec has none)", c)
	}

	for _, c := range []struct{ name, method, path, body, want string }{
		{"operation", "PATCH", "/podgroups?name=hello.web.web&cmd=operation&optype=halt", "", "start, stop or restart"},
		{"bad cmd", "PATCH", "/podgroups?name=hello.web.web&cmd=x", "", "replica, spec or operation"},
		{"unknown field", "POST", "/podgroups", strings.Replace(deploydPodGroup, `"NumInstances"`, `"NumInstance"`, 1), `unknown field \"NumInstance\"`},
		{"negative instances", "POST", "/podgroups", strings.Replace(deploydPodGroup, `"NumInstances":2`, `"NumInstances":-1`, 1), "NumInstances: must not be negative"},
		{"negative scale", "PATCH", "/podgroups?name=hello.web.web&cmd=replica&num_instances=-2", "", "num_instances"},
		{"cloud volumes", "POST", "/podgroups", strings.Replace(deploydPodGroup, `"Expose":5000`, `"CloudVolumes":[{"Type":"single","Dirs":["/data"]}]`, 1), "CloudVolumes"},
		{"bad name", "POST", "/podgroups", strings.Replace(deploydPodGroup, `"Name":"hello.web.web","Namespace"`, `"Name":"Hello_Web","Namespace"`, 1), "Name: must be lowercase"},
		{"bad policy", "POST", "/podgroups", strings.Replace(deploydPodGroup, `"RestartPolicy":1`, `"RestartPolicy":7`, 1), "RestartPolicy"},
		{"bad filter", "POST", "/podgroups", strings.Replace(deploydPodGroup, `constraint:node!=node-9`, `constraint:node~node-9`, 1), "Filters[0]"},
	} {
		r := deploydCall(t, c.method, url+c.path, c.body, nil)
		if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: HTTP %d %s, want 400 with %q", c.name, r.code, r.body, c.want)
		}
	}
	wantDeployd(t, deploydCall(t, "GET", url+"/podgroups?name=nope.web", "", nil), http.StatusNotFound, "not found")

	// A deployment written through /v1 is a pod group too, found by its name.
	wantStatus(t, call(t, http.MethodPost, strings.TrimSuffix(url, "/api")+"/v1/namespaces/plain/deployments", deployJSON("plain", "native", "one")), http.StatusCreated)
	wantDeployd(t, deploydCall(t, "PATCH", url+"/podgroups?name=native&cmd=spec", `{"Stateful":true,"Containers":[{"Image":"x"}]}`, nil), http.StatusAccepted, "upgrading")
	if d := getDeployment(t, "plain", "native"); d.Metadata.Annotations[v4.StatefulAnnotation] != "true" || d.Spec.Template.Spec.Containers[0].Image != "x" {
		t.Fatalf("native deployment after cmd=spec: %+v", d.Metadata)
	}
	wantDeployd(t, deploydCall(t, "DELETE", url+"/depends?name=rpc.portal", "", nil), http.StatusMethodNotAllowed, "is used by 1 task group")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/depends?name=rpc.portal&force=true", "", nil), http.StatusAccepted, "removing")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/podgroups?name=hello.web.web", "", nil), http.StatusAccepted, "deleting")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/podgroups?name=hello.web.web", "", nil), http.StatusNotFound, "")
}

// The engine switches are berth's maintenance mode: writes outside /api/engine/ get
// deployd's 403 while it is on; reads go on; /api/status starts and stops it.
func TestDeploydEngine(t *testing.T) {
	url := newTestServer(t, Config{}) + "/api"
	var cfg deployd.EngineConfig
	wantDeployd(t, deploydCall(t, "GET", url+"/engine/config", "", &cfg), http.StatusOK, "")
	if cfg.ReadOnly || cfg.Maintenance {
		t.Fatalf("fresh engine %+v", cfg)
	}
	wantDeployd(t, deploydCall(t, "PATCH", url+"/engine/config", `{"readonly":true}`, &cfg), http.StatusOK, "")
	t.Cleanup(func() { call(t, http.MethodPut, strings.TrimSuffix(url, "/api")+"/v1/engine", `{"maintenance":false}`) })
	if !cfg.ReadOnly {
		t.Fatalf("after readonly: %+v", cfg)
	}
	wantDeployd(t, deploydCall(t, "POST", url+"/podgroups", deploydPodGroup, nil), http.StatusForbidden, "readonly or maintenance")
	wantDeployd(t, deploydCall(t, "GET", url+"/podgroups?name=hello.web.web", "", nil), http.StatusNotFound, "")
	wantDeployd(t, call(t, http.MethodPost, strings.TrimSuffix(url, "/api")+"/v1/namespaces/x/processes", procJSON("x", "p", 1)), http.StatusLocked, "maintenance")
	wantDeployd(t, deploydCall(t, "GET", url+"/status", "", nil), http.StatusOK, `"status":"stopped"`)
	wantDeployd(t, deploydCall(t, "PATCH", url+"/engine/maintenance?on=false", "", nil), http.StatusOK, `"maintenance":false`)
	wantDeployd(t, deploydCall(t, "PATCH", url+"/status", `{"status":"stop"}`, nil), http.StatusAccepted, `"Accept"`)
	wantDeployd(t, deploydCall(t, "POST", url+"/notifies?callback=http://127.0.0.1:9/x", "", nil), http.StatusForbidden, "")
	var accepted string // deployd answered a bare JSON string
	wantDeployd(t, deploydCall(t, "PATCH", url+"/status", `{"status":"start"}`, &accepted), http.StatusAccepted, "")
	if accepted != "Accept" {
		t.Fatalf("PATCH /api/status answered %q, want deployd's \"Accept\"", accepted)
	}
	wantDeployd(t, deploydCall(t, "GET", url+"/status", "", nil), http.StatusOK, `"status":"started"`)
	wantDeployd(t, deploydCall(t, "PATCH", url+"/status", `{"status":"pause"}`, nil), http.StatusBadRequest, "start")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/engine/config", `{"readOnly":"yes"}`, nil), http.StatusBadRequest, "engine configuration")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/engine/maintenance?on=maybe", "", nil), http.StatusBadRequest, "boolean")
	wantDeployd(t, deploydCall(t, "GET", url+"/guard", "", nil), http.StatusNotFound, "no deployd route")
}

// Nodes, node constraints (a disabled node) and notify callbacks (notify objects).
func TestDeploydNodesConstraintsNotifies(t *testing.T) {
	url := newTestServer(t, Config{}) + "/api"
	createNode(t, "node-1", func(n *v4.Node) {
		n.Spec.Taints = []v4.Taint{{Key: "dedicated", Value: "db", Effect: v4.TaintNoSchedule}}
	})
	createNode(t, "node-2")
	putTaskGroup(t, "ns", "0.web.ns.c.1", "node-1", func(tg *v4.TaskGroup) {
		tg.Spec.Resources = v4.NodeResources{CPU: 0.5, MemoryMB: 64}
		tg.Status.Phase = v4.StatusRunning
	})
	var nodes []deployd.Node
	wantDeployd(t, deploydCall(t, "GET", url+"/nodes", "", &nodes), http.StatusOK, "")
	if len(nodes) != 2 || nodes[0].Name != "node-1" || nodes[0].Containers != 1 || nodes[0].UsedCPUs != 0.5 ||
		nodes[0].UsedMemory != 64<<20 || nodes[0].CPUs != 8 || nodes[1].Containers != 0 {
		t.Fatalf("nodes %+v", nodes)
	}
	wantDeployd(t, deploydCall(t, "PATCH", url+"/nodes?cmd=drift&from=node-1&to=node-1", "", nil), http.StatusBadRequest, "must differ")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/nodes?cmd=drift&from=node-2", "", nil), http.StatusAccepted, "drifting 0 instances")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/nodes?cmd=drift&from=node-1&pg_instance=0", "", nil), http.StatusBadRequest, "pg_instance")

	wantDeployd(t, deploydCall(t, "GET", url+"/constraints?type=node", "", nil), http.StatusNotFound, "no node constraint")
	// deployd's default is soft: node-1 is tainted PreferNoSchedule, not disabled; the
	// operator's own taint stays.
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node&value=node-1&equal=false", "", nil), http.StatusAccepted,
		`"check_url":"/api/constraints?type=node"`)
	if n := getNode(t, "node-1"); n.Spec.Disabled || len(n.Spec.Taints) != 2 ||
		n.Spec.Taints[1] != (v4.Taint{Key: deployd.ConstraintLabel, Value: "node", Effect: v4.TaintPreferNoSchedule}) {
		t.Fatalf("a soft constraint must taint node-1, not disable it: %+v", n.Spec)
	}
	wantDeployd(t, deploydCall(t, "GET", url+"/constraints", "", nil), http.StatusOK, `"Value":"node-1","Soft":true`)
	// Hard on the same node: disabled, the soft taint gone.
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node&value=node-1&soft=false", "", nil), http.StatusAccepted, "patched")
	if n := getNode(t, "node-1"); !n.Spec.Disabled || len(n.Spec.Taints) != 1 {
		t.Fatalf("a hard constraint must disable node-1: %+v", n.Spec)
	}
	wantDeployd(t, deploydCall(t, "GET", url+"/constraints", "", nil), http.StatusOK, `"Value":"node-1","Soft":false`)
	// An explicit soft one on node-2 replaces it: node-1 enabled again.
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node&value=node-2&soft=true", "", nil), http.StatusAccepted, "patched")
	if n1, n2 := getNode(t, "node-1"), getNode(t, "node-2"); n1.Spec.Disabled || n1.Metadata.Labels[deployd.ConstraintLabel] != "" ||
		len(n1.Spec.Taints) != 1 || n2.Spec.Disabled || len(n2.Spec.Taints) != 1 {
		t.Fatalf("a new node constraint must replace the old one: %+v %+v", n1, n2)
	}
	wantDeployd(t, deploydCall(t, "GET", url+"/constraints", "", nil), http.StatusOK, `"Value":"node-2","Soft":true`)
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node&value=node-1&equal=true", "", nil), http.StatusBadRequest, "equal=true")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node&value=node-1&soft=maybe", "", nil), http.StatusBadRequest, "soft")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?value=node-1", "", nil), http.StatusBadRequest, "type is required")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node", "", nil), http.StatusBadRequest, "value is required")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=label&value=x", "", nil), http.StatusBadRequest, "node constraints only")
	wantDeployd(t, deploydCall(t, "PATCH", url+"/constraints?type=node&value=nope", "", nil), http.StatusNotFound, "")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/constraints?type=node", "", nil), http.StatusAccepted, "deleted")
	if n := getNode(t, "node-2"); n.Spec.Disabled || n.Metadata.Labels[deployd.ConstraintLabel] != "" || len(n.Spec.Taints) != 0 {
		t.Fatalf("after delete: %+v", n)
	}
	wantDeployd(t, deploydCall(t, "DELETE", url+"/constraints?type=node", "", nil), http.StatusNotFound, "")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/nodes?node=node-2", "", nil), http.StatusAccepted, "draining")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/nodes?node=nope", "", nil), http.StatusNotFound, "")

	wantDeployd(t, deploydCall(t, "GET", url+"/notifies", "", nil), http.StatusNotFound, "no notify callback")
	wantDeployd(t, deploydCall(t, "POST", url+"/notifies?callback=http://127.0.0.1:9/hook", "", nil), http.StatusAccepted, "added")
	wantDeployd(t, deploydCall(t, "POST", url+"/notifies?callback=http://127.0.0.1:9/hook", "", nil), http.StatusMethodNotAllowed, "exists")
	wantDeployd(t, deploydCall(t, "POST", url+"/notifies?callback=ftp://x", "", nil), http.StatusBadRequest, "spec.url")
	wantDeployd(t, deploydCall(t, "GET", url+"/notifies", "", nil), http.StatusOK, `["http://127.0.0.1:9/hook"]`)
	wantDeployd(t, deploydCall(t, "DELETE", url+"/notifies?callback=http://127.0.0.1:9/hook", "", nil), http.StatusAccepted, "removed")
	wantDeployd(t, deploydCall(t, "DELETE", url+"/notifies?callback=http://127.0.0.1:9/hook", "", nil), http.StatusNotFound, "")
}

// deployd's routes grant what /v1's do.
func TestDeploydAuthorization(t *testing.T) {
	url := newTestServer(t, Config{})
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	if r := callAs(t, "", http.MethodGet, url+"/api/podgroups?name=nope", "", ro); r.code != http.StatusNotFound {
		t.Fatalf("read-only read: %d %s", r.code, r.body)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/podgroups", deploydPodGroup},
		{http.MethodPatch, "/api/engine/config", `{"readonly":true}`},
		{http.MethodPost, "/api/notifies?callback=http://127.0.0.1:9/x", ""},
	} {
		r := callAs(t, "", c.method, url+c.path, c.body, ro)
		if r.code != http.StatusForbidden || !strings.Contains(string(r.body), "may not") {
			t.Errorf("read-only %s %s: %d %s", c.method, c.path, r.code, r.body)
		}
	}

	// A token that writes one namespace, and may not read the engine, creates its pod
	// groups; in maintenance mode berth's own guard refuses them, as deployd's 403.
	hello := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: hello}
rules:
  - namespaces: [hello, deployd]
    kinds: ["*"]
    verbs: [read, write]
`, "hello", "")
	if r := callAs(t, "", http.MethodPost, url+"/api/podgroups", deploydPodGroup, hello); r.code != http.StatusAccepted {
		t.Fatalf("namespace writer: %d %s", r.code, r.body)
	}
	// Nodes are no namespace's: a namespace's token sets no constraint.
	createNode(t, "node-1")
	if r := callAs(t, "", http.MethodPatch, url+"/api/constraints?type=node&value=node-1", "", hello); r.code != http.StatusForbidden {
		t.Errorf("namespace writer's constraint: %d %s", r.code, r.body)
	}
	if n := getNode(t, "node-1"); len(n.Spec.Taints) != 0 || n.Metadata.Labels[deployd.ConstraintLabel] != "" {
		t.Errorf("a refused constraint changed the node: %+v", n)
	}
	wantStatus(t, call(t, http.MethodPut, url+"/v1/engine", `{"maintenance":true,"reason":"test"}`), http.StatusOK)
	t.Cleanup(func() { call(t, http.MethodPut, url+"/v1/engine", `{"maintenance":false}`) }) // the engine outlives the test's namespaces
	r := callAs(t, "", http.MethodDelete, url+"/api/podgroups?name=hello.web.web", "", hello)
	if r.code != http.StatusForbidden || !strings.Contains(string(r.body), "maintenance mode") {
		t.Fatalf("namespace writer in maintenance: %d %s", r.code, r.body)
	}
}

func getNode(t *testing.T, name string) *v4.Node {
	t.Helper()
	o, err := testStore.Get(t.Context(), v4.KindNode, "", name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v4.Node)
}
