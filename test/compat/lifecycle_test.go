package compat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// deploymentDoc is a BCS deployment of processes in ns, with instances and V=version.
func deploymentDoc(ns string, instances int, version string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"deployment","metadata":{"name":"web","namespace":%q,"labels":{"app":"web"}},
 "restartPolicy":{"policy":"Always","interval":1},"killPolicy":{"gracePeriod":1},
 "spec":{"instance":%d,"selector":{"app":"web"},
  "strategy":{"type":"RollingUpdate","rollingupdate":{"maxUnavilable":1,"maxSurge":1,"upgradeDuration":0,"rollingOrder":"CreateFirst"}},
  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"processes":[{"procName":"sh","startCmd":"sleep 100000; true",
   "env":[{"name":"V","value":%q}],"resources":{"limits":{"cpu":"0.05","memory":"16"}}}]}}}}`, ns, instances, version)
}

// The acceptance of BCS's API: create, scale, rolling update and delete of a deployment
// through /bcsapi/v4/scheduler/mesos leave, at each step, the same objects as the same
// steps through /v1: the deployment, its applications and their task groups.
func TestBCSLifecycleMatchesV1(t *testing.T) {
	b := startBerth(t)
	b.node(t)
	bcs := http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Content-Type": {"application/json"}}
	plain := http.Header{"Content-Type": {"application/json"}}
	viaBCS := func(method, path, body string) {
		t.Helper()
		status, _, got := b.do(t, method, "/bcsapi/v4/scheduler/mesos/namespaces/viabcs"+path, bcs, body)
		if status != http.StatusOK || !strings.Contains(string(got), `"code":0`) {
			t.Fatalf("BCS %s %s: %d %s", method, path, status, got)
		}
	}
	viaV1 := func(method, path, body string, want int) {
		t.Helper()
		if status, _, got := b.do(t, method, "/v1/namespaces/viav1"+path, plain, body); status != want {
			t.Fatalf("/v1 %s %s: %d %s", method, path, status, got)
		}
	}
	step := func(name string, instances, revision int) {
		t.Helper()
		a := b.settled(t, "viabcs", instances, revision)
		v := b.settled(t, "viav1", instances, revision)
		if !reflect.DeepEqual(a, v) {
			t.Fatalf("after %s, through BCS:\n%s\nthrough /v1:\n%s", name, a, v)
		}
	}

	viaBCS(http.MethodPost, "/deployments", deploymentDoc("viabcs", 2, "1"))
	viaV1(http.MethodPost, "/deployments", deploymentDoc("viav1", 2, "1"), http.StatusCreated)
	step("create", 2, 1)

	viaBCS(http.MethodPut, "/deployments/web/scale/3", "")
	viaV1(http.MethodPost, "/deployments/web/scale", `{"instances":3}`, http.StatusAccepted)
	step("scale", 3, 1)

	viaBCS(http.MethodPut, "/deployments", deploymentDoc("viabcs", 3, "2"))
	viaV1(http.MethodPut, "/deployments/web", deploymentDoc("viav1", 3, "2"), http.StatusAccepted)
	step("rolling update", 3, 2)

	viaBCS(http.MethodDelete, "/deployments/web?enforce=0", "")
	viaV1(http.MethodDelete, "/deployments/web", "", http.StatusOK)
	step("delete", 0, 0)
}

// settled waits until ns's deployment web has instances running task groups of
// revision (none at all for 0) and returns what the steps compare, with the namespace,
// times, resource versions and task group IDs taken out.
func (b *berth) settled(t *testing.T, ns string, instances, revision int) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		var tgs struct{ Items []*v4.TaskGroup }
		var apps struct{ Items []*v4.Workload }
		var d v4.Deployment
		b.get(t, "/v1/namespaces/"+ns+"/taskgroups", &tgs)
		b.get(t, "/v1/namespaces/"+ns+"/processes", &apps)
		status := b.get(t, "/v1/namespaces/"+ns+"/deployments/web", &d)
		var lines []string
		running, appsSettled := 0, true
		for _, tg := range tgs.Items {
			if tg.Status.Phase == v4.StatusRunning && tg.Spec.Owner.Name == fmt.Sprintf("web-v%d", revision) {
				running++
			}
			lines = append(lines, fmt.Sprintf("taskgroup %s/%d %s desired=%s", tg.Spec.Owner.Name, tg.Spec.Index, tg.Status.Phase, tg.Spec.Desired))
		}
		for _, a := range apps.Items {
			appsSettled = appsSettled && a.Status.Phase == v4.StatusRunning && a.Status.Running == a.Spec.Instance
			tmpl, _ := json.Marshal(a.Spec.Template)
			lines = append(lines, fmt.Sprintf("process %s instance=%d phase=%s running=%d labels=%v template=%s",
				a.Metadata.Name, a.Spec.Instance, a.Status.Phase, a.Status.Running, a.Metadata.Labels, tmpl))
		}
		if status == http.StatusOK {
			spec, _ := json.Marshal(d.Spec)
			lines = append(lines, fmt.Sprintf("deployment phase=%s revision=%d instances=%d current=%d old=%d spec=%s labels=%v",
				d.Status.Phase, d.Status.Revision, d.Status.Instances, d.Status.Current, d.Status.Old, spec, d.Metadata.Labels))
		}
		sort.Strings(lines)
		last = strings.ReplaceAll(strings.Join(lines, "\n"), ns, "NS")
		done := len(tgs.Items) == instances && running == instances
		if revision == 0 {
			done = len(tgs.Items) == 0 && len(apps.Items) == 0 && status == http.StatusNotFound
		} else {
			done = done && appsSettled && d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == revision && len(apps.Items) == 1
		}
		if done {
			return last
		}
	}
	t.Fatalf("%s did not settle at %d instances of revision %d in 90 s:\n%s", ns, instances, revision, last)
	return ""
}

// get decodes a GET into out and returns its status.
func (b *berth) get(t *testing.T, path string, out any) int {
	t.Helper()
	status, _, body := b.do(t, http.MethodGet, path, nil, "")
	if status == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return status
}
