package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/store"
)

// bcsAnswer is BCS's envelope as a client reads it.
type bcsAnswer struct {
	status   int
	header   http.Header
	Result   bool            `json:"result"`
	Code     int             `json:"code"`
	Message  string          `json:"message"`
	Data     json.RawMessage `json:"data"`
	Warnings []string        `json:"warnings"`
}

// bcsCall calls BCS's API as bcs-client does: the cluster header, JSON, a token.
func bcsCall(t *testing.T, method, url, body, token string) bcsAnswer {
	t.Helper()
	r := callWith(t, "", method, url, body, token,
		http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Content-Type": {"application/json"}})
	a := bcsAnswer{status: r.code, header: r.header}
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("%s %s: not BCS's envelope (%v): %s", method, url, err, r.body)
	}
	return a
}

func wantBCS(t *testing.T, a bcsAnswer, code int) {
	t.Helper()
	if a.Code != code || a.Result != (code == 0) || a.Message == "" {
		t.Fatalf("BCS answer %d %+v, want code %d", a.status, a, code)
	}
}

const bcsApp = `{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"NS","labels":{"app":"web"}},
 "restartPolicy":{"policy":"Always"},
 "spec":{"instance":1,"template":{"spec":{"containers":[{"image":"IMAGE","resources":{"limits":{"cpu":"0.1","memory":"64"}}}]}}}}`

func appDoc(ns, image string) string {
	return strings.NewReplacer("NS", ns, "IMAGE", image).Replace(bcsApp)
}

// normalized is a stored object with what differs between two namespaces of the same
// history taken out.
func normalized(t *testing.T, kind v4.Kind, ns, name string) v4.Object {
	t.Helper()
	obj, err := testStore.Get(context.Background(), kind, ns, name)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", kind, ns, name, err)
	}
	m := obj.GetMeta()
	m.Namespace, m.ResourceVersion = "", ""
	m.CreationTimestamp = time.Time{}
	return obj
}

// The same steps through BCS's routes (under both prefixes) and through /v1 leave the
// same objects in the store: create, scale, rolling update (a new image), then delete.
func TestBCSStepsMatchV1(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, prefix := range []string{"/bcsapi/v4/scheduler/mesos", "/mesosdriver/v4"} {
		t.Run(prefix, func(t *testing.T) {
			ns := strings.Split(prefix, "/")[1] // a namespace of each prefix's own
			door := url + prefix + "/namespaces/" + ns + "/applications"
			v1 := url + "/v1/namespaces/v1" + ns + "/applications"
			same := func(step string) {
				t.Helper()
				a, b := normalized(t, v4.KindApplication, ns, "web"), normalized(t, v4.KindApplication, "v1"+ns, "web")
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("after %s: BCS's object\n%+v\n/v1's\n%+v", step, a, b)
				}
			}
			wantBCS(t, bcsCall(t, http.MethodPost, door, appDoc(ns, "busybox:1"), ""), 0)
			wantStatus(t, call(t, http.MethodPost, v1, appDoc("v1"+ns, "busybox:1")), http.StatusCreated)
			same("create")

			wantBCS(t, bcsCall(t, http.MethodPut, door+"/web/scale/3", "", ""), 0)
			wantStatus(t, call(t, http.MethodPost, v1+"/web/scale", `{"instances":3}`), http.StatusAccepted)
			same("scale")

			update := strings.Replace(appDoc(ns, "busybox:2"), `"instance":1`, `"instance":3`, 1)
			wantBCS(t, bcsCall(t, http.MethodPut, door+"?instances=3", update, ""), 0)
			wantStatus(t, call(t, http.MethodPut, v1+"/web", strings.Replace(appDoc("v1"+ns, "busybox:2"), `"instance":1`, `"instance":3`, 1)), http.StatusOK)
			same("update")

			got := bcsCall(t, http.MethodGet, door+"/web", "", "")
			wantBCS(t, got, 0)
			var app struct {
				Kind, ID, Name, RunAs string
				DefineInstances       int
				ObjectMeta            struct{ Name, Namespace string }
			}
			if err := json.Unmarshal(got.Data, &app); err != nil || app.ID != "web" || app.RunAs != ns || app.DefineInstances != 3 ||
				app.Kind != "application" || app.ObjectMeta.Namespace != ns {
				t.Fatalf("GET application: %v %+v from %s", err, app, got.Data)
			}

			wantBCS(t, bcsCall(t, http.MethodDelete, door+"/web?enforce=0", "", ""), 0)
			wantStatus(t, call(t, http.MethodDelete, v1+"/web", ""), http.StatusOK)
			for _, in := range []string{ns, "v1" + ns} {
				if _, err := testStore.Get(context.Background(), v4.KindApplication, in, "web"); !errorsIsNotFound(err) {
					t.Fatalf("after delete, %s/web: %v", in, err)
				}
			}
		})
	}
}

func errorsIsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// Reads answer BCS's shapes: an application with its pods, its task groups with their
// tasks, its versions and the definition as written.
func TestBCSReads(t *testing.T) {
	url := newTestServer(t, Config{})
	doc := procJSON("rd", "web", 2)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/rd/processes", doc), http.StatusCreated)
	putTaskGroup(t, "rd", "1.web.rd.c.2", "n1", func(tg *v4.TaskGroup) {
		tg.Spec.Index = 1
		tg.Status = v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1",
			Tasks: []v4.TaskStatus{{Name: "web", Status: v4.StatusRunning, Info: v4.ContainerInfo{Pid: 42}}}}
	})
	putTaskGroup(t, "rd", "0.web.rd.c.1", "n2", nil)
	base := url + bcs.GatewayPrefix + "/namespaces/rd/processes"

	a := bcsCall(t, http.MethodGet, base, "", "")
	wantBCS(t, a, 0)
	var apps []struct {
		Kind, ID, RunAs, ClusterId string
		DefineInstances, Instances int
		Pods                       []struct{ Name string }
	}
	if err := json.Unmarshal(a.Data, &apps); err != nil || len(apps) != 1 || apps[0].Kind != "process" || apps[0].DefineInstances != 2 ||
		apps[0].Instances != 2 || apps[0].ClusterId != "BCS-MESOS-10001" || len(apps[0].Pods) != 2 || apps[0].Pods[0].Name != "0.web.rd.c.1" {
		t.Fatalf("list: %v %+v from %s", err, apps, a.Data)
	}

	a = bcsCall(t, http.MethodGet, base+"/web/taskgroups", "", "")
	wantBCS(t, a, 0)
	var tgs []struct {
		ID, Name, Status, HostName string
		InstanceID                 int
		Taskgroup                  []struct {
			Name, Status, AgentIPAddress, StatusData string
		}
	}
	if err := json.Unmarshal(a.Data, &tgs); err != nil || len(tgs) != 2 {
		t.Fatalf("taskgroups: %v %s", err, a.Data)
	}
	tg := tgs[1]
	if tg.ID != "1.web.rd.c.2" || tg.Name != "web-1" || tg.InstanceID != 1 || tg.Status != "Running" || tg.HostName != "n1" ||
		len(tg.Taskgroup) != 1 || tg.Taskgroup[0].AgentIPAddress != "10.0.0.1" || !strings.Contains(tg.Taskgroup[0].StatusData, `"Pid":42`) {
		t.Fatalf("task group: %+v", tg)
	}

	a = bcsCall(t, http.MethodGet, base+"/web/versions", "", "")
	wantBCS(t, a, 0)
	var ids []string
	if err := json.Unmarshal(a.Data, &ids); err != nil || len(ids) != 1 {
		t.Fatalf("versions: %v %s", err, a.Data)
	}
	a = bcsCall(t, http.MethodGet, base+"/web/versions/"+ids[0], "", "")
	wantBCS(t, a, 0)
	var version struct {
		ID      string
		RawJSON json.RawMessage `json:"raw_json"`
	}
	if err := json.Unmarshal(a.Data, &version); err != nil || version.ID != ids[0] || string(version.RawJSON) != doc {
		t.Fatalf("version: %v %s", err, a.Data)
	}
	wantBCS(t, bcsCall(t, http.MethodGet, base+"/web/versions/1", "", ""), bcs.CodeNotFound)

	a = bcsCall(t, http.MethodGet, url+bcs.DriverPrefix+"/definition/process/rd/web", "", "")
	wantBCS(t, a, 0)
	if string(a.Data) != doc {
		t.Fatalf("definition: %s", a.Data)
	}
	wantBCS(t, bcsCall(t, http.MethodGet, base+"/nope", "", ""), bcs.CodeNotFound)
}

// A key BCS declares and berth ignores is accepted with the warning, in the envelope and
// as a Warning header, as /v1 answers it.
func TestBCSWarnings(t *testing.T) {
	url := newTestServer(t, Config{})
	doc := strings.Replace(procJSON("wr", "web", 1), `"spec":{`, `"updatePolicy":{"updateDelay":5},"spec":{`, 1)
	a := bcsCall(t, http.MethodPost, url+bcs.GatewayPrefix+"/namespaces/wr/processes", doc, "")
	wantBCS(t, a, 0)
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "updatePolicy is ignored by berth") || len(a.header.Values("Warning")) != 1 {
		t.Fatalf("warnings %q, headers %q", a.Warnings, a.header.Values("Warning"))
	}
	a = bcsCall(t, http.MethodPut, url+bcs.GatewayPrefix+"/namespaces/wr/processes?instances=1&args=resource", procJSON("wr", "web", 2), "")
	wantBCS(t, a, 0)
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "args=resource") { // instances=1 is done (a replace)
		t.Fatalf("update warnings %q", a.Warnings)
	}
}
