package compat

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

const shapesSecret = "TOPSECRET-c0ffee"

// shapesProc is a BCS process with an env from a secret and a constraint, so its task
// group records an attribute.
const shapesProc = `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"shapes"},
 "restartPolicy":{"policy":"OnFailure","interval":2},"killPolicy":{"gracePeriod":1},
 "constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"UNIQUE"}]}]},
 "spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sh","startCmd":"sleep 100000; true",
  "env":[{"name":"PLAIN","value":"p1"}],
  "secrets":[{"secretName":"pw","items":[{"type":"env","dataKey":"k","keyOrPath":"PASSWORD"}]}],
  "resources":{"limits":{"cpu":"0.05","memory":"16"}}}]}}}}`

// Through the real binary, every BCS read of a running process decodes into BCS's Go
// types, carries the node, the recorded attribute, the restart policy and the env (the
// secret's as its reference), and shows the secret's value nowhere.
func TestBCSReadsDecode(t *testing.T) {
	b := startBerth(t)
	node := b.node(t)
	hdr := http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Content-Type": {"application/json"}}
	var bodies []string
	bcsDo := func(method, path, body string) []byte {
		t.Helper()
		status, _, got := b.do(t, method, "/bcsapi/v4/"+path, hdr, body)
		var env bcswire.Response
		if err := bcswire.Decode(got, &env); status != http.StatusOK || err != nil || env.Code != 0 {
			t.Fatalf("BCS %s %s: %d %v %s", method, path, status, err, got)
		}
		bodies = append(bodies, string(got))
		return env.Data
	}
	sched := func(method, path, body string) []byte { t.Helper(); return bcsDo(method, "scheduler/mesos"+path, body) }
	decode := func(path string, into any) {
		t.Helper()
		if err := bcswire.Decode(sched(http.MethodGet, path, ""), into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(shapesSecret))
	sched(http.MethodPost, "/namespaces/shapes/secrets",
		`{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"shapes"},"datas":{"k":{"content":"`+b64+`"}}}`)
	sched(http.MethodPost, "/namespaces/shapes/processes", shapesProc)
	sched(http.MethodPost, "/namespaces/shapes/deployments", deploymentDoc("shapes", 1, "1"))

	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		var tgs struct{ Items []*v4.TaskGroup }
		b.get(t, "/v1/namespaces/shapes/taskgroups", &tgs)
		running := 0
		for _, tg := range tgs.Items {
			if tg.Status.Phase == v4.StatusRunning {
				running++
			}
		}
		if running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not 2 running task groups in 60 s: %d of %d", running, len(tgs.Items))
		}
	}

	var procs []bcswire.Application
	decode("/namespaces/shapes/processes", &procs)
	var proc bcswire.Application
	decode("/namespaces/shapes/processes/web", &proc)
	if proc.Kind != "process" || proc.DefineInstances != 1 || proc.SubStatus != "Unknown" || proc.LastStatus == "" || proc.Mode != "" {
		t.Errorf("process: %+v", proc)
	}
	var tgs []bcswire.TaskGroup
	decode("/namespaces/shapes/processes/web/taskgroups", &tgs)
	if len(tgs) != 1 || len(tgs[0].Taskgroup) != 1 {
		t.Fatalf("task groups: %+v", tgs)
	}
	tg, task := tgs[0], tgs[0].Taskgroup[0]
	if tg.Status != "Running" || tg.LastStatus == "" || tg.LastStatus == "Running" {
		t.Errorf("task group: Status %q, LastStatus %q (want the phase before Running)", tg.Status, tg.LastStatus)
	}
	if tg.AgentID != node || tg.RestartPolicy == nil || tg.RestartPolicy.Policy != "OnFailure" || tg.RestartPolicy.Interval != 2 ||
		tg.LaunchResource == nil || tg.LaunchResource.Cpus < 0.05 {
		t.Errorf("task group: AgentID %q (node %q) restart %+v resource %+v", tg.AgentID, node, tg.RestartPolicy, tg.LaunchResource)
	}
	if len(tg.Attributes) != 1 || tg.Attributes[0].Name == nil || *tg.Attributes[0].Name != "hostname" ||
		tg.Attributes[0].Type == nil || *tg.Attributes[0].Type != 3 {
		t.Errorf("attributes: %s", bodies[len(bodies)-1])
	}
	if task.Env["PLAIN"] != "p1" || task.Env["PASSWORD"] != "secret::pw||k" || task.AgentId != node {
		t.Errorf("task: env %v agent %q", task.Env, task.AgentId)
	}
	if task.DataClass == nil || task.DataClass.ProcInfo == nil || task.DataClass.ProcInfo.StartCmd != "sleep 100000; true" ||
		task.DataClass.LimitResources == nil || task.DataClass.LimitResources.Mem != 16 {
		t.Errorf("task data class: %+v", task.DataClass)
	}
	var ids []string
	if err := json.Unmarshal(sched(http.MethodGet, "/namespaces/shapes/processes/web/versions", ""), &ids); err != nil || len(ids) != 1 {
		t.Fatalf("versions: %v %v", err, ids)
	}
	var version bcswire.Version
	decode("/namespaces/shapes/processes/web/versions/"+ids[0], &version)
	if version.RawJson == nil { // BCS's *ReplicaController: the definition, as api/v4 decodes BCS's documents
		t.Errorf("version without raw_json: %+v", version)
	} else if _, err := v4.Parse(*version.RawJson); err != nil {
		t.Errorf("the version's raw_json: %v", err)
	}
	var deps []bcswire.Deployment
	decode("/namespaces/shapes/deployments", &deps)
	var dep bcswire.Deployment
	decode("/namespaces/shapes/deployments/web", &dep)
	if dep.Application == nil || dep.Application.ApplicationName != "web-v1" || dep.CheckTime == 0 {
		t.Errorf("deployment: %+v", dep)
	}
	var dtgs []bcswire.TaskGroup
	decode("/namespaces/shapes/processes/web-v1/taskgroups", &dtgs)
	var res bcswire.ClusterResource
	decode("/cluster/resources", &res)

	// bcs-client list and inspect read storage: its documents decode as BCS's too.
	storage := func(path string, into any) {
		t.Helper()
		if err := bcswire.Decode(bcsDo(http.MethodGet, "storage"+path, ""), into); err != nil {
			t.Fatalf("GET storage %s: %v", path, err)
		}
	}
	var rcs []bcswire.StorageItem[bcswire.RCStatus]
	storage("/query/mesos/dynamic/clusters/BCS-MESOS-10001/process?namespace=shapes", &rcs)
	var pods []bcswire.StorageItem[bcswire.PodStatus]
	storage("/query/mesos/dynamic/clusters/BCS-MESOS-10001/taskgroup?namespace=shapes", &pods)
	var pod bcswire.StorageItem[bcswire.PodStatus]
	storage("/mesos/dynamic/namespace_resources/clusters/BCS-MESOS-10001/namespaces/shapes/taskgroup/"+tg.ID, &pod)
	if len(rcs) != 2 || len(pods) != 2 || pod.Data.Status != "Running" || pod.Data.LastStatus == "" {
		t.Errorf("storage: %d processes, %d task groups, %+v", len(rcs), len(pods), pod.Data)
	}
	for _, rc := range rcs {
		if rc.Data.Status == "Running" && rc.Data.LastStatus == "" {
			t.Errorf("storage's process %s: no lastStatus", rc.ResourceName)
		}
	}

	// The writes bcs-client makes on a running process answer BCS's envelope, data null
	// (bcsDo decodes it strictly): reschedule (bcs-client reschedule; the deployment's
	// process, which no UNIQUE constraint keeps off the one node) and scale.
	if len(dtgs) != 1 {
		t.Fatalf("the deployment's task groups: %+v", dtgs)
	}
	if got := sched(http.MethodPut, "/namespaces/shapes/processes/web-v1/taskgroups/"+dtgs[0].ID+"/rescheduler", ""); string(got) != "null" {
		t.Errorf("reschedule: data %s", got)
	}
	if got := sched(http.MethodPut, "/namespaces/shapes/processes/web/scale/1", ""); string(got) != "null" {
		t.Errorf("scale: data %s", got)
	}
	if len(res.Agents) != 1 || res.Agents[0].CPUUsed <= 0 {
		t.Errorf("cluster resources: %+v", res)
	}
	for _, body := range bodies {
		if strings.Contains(body, shapesSecret) || strings.Contains(body, b64) {
			t.Errorf("the secret's value in an answer: %s", body)
		}
	}
}
