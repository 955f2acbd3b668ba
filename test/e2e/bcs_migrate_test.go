package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

// bcsCluster is the BCS cluster ID the migration guide's server is started with.
const bcsCluster = "BCS-MESOS-10001"

// bcsClient calls berth as bcs-client does (docs/migrate-from-bcs.md): the BCS gateway's
// routes on berth's address, the token as its bcs_token (Authorization: Bearer), the
// cluster in BCS-ClusterID, the cluster CA trusted.
type bcsClient struct {
	t    *testing.T
	s    *devServer // its http sends the token
	base string
}

// bcsAnswer is BCS's envelope, with berth's warnings.
type bcsAnswer struct {
	Result   bool            `json:"result"`
	Code     int             `json:"code"`
	Message  string          `json:"message"`
	Data     json.RawMessage `json:"data"`
	Warnings []string        `json:"warnings"`
}

// call sends one request to path under base and decodes the envelope; BCS answered every
// route with HTTP 200.
func (c *bcsClient) call(method, path string, body []byte) bcsAnswer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("BCS-ClusterID", bcsCluster)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.s.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a bcsAnswer
	if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != http.StatusOK {
		c.t.Fatalf("%s %s: HTTP %d, %v: %s", method, path, resp.StatusCode, err, raw)
	}
	return a
}

// ok is call, requiring BCS's success.
func (c *bcsClient) ok(method, path string, body []byte) bcsAnswer {
	c.t.Helper()
	a := c.call(method, path, body)
	if a.Code != 0 || !a.Result {
		c.t.Fatalf("%s %s: code %d: %s", method, path, a.Code, a.Message)
	}
	return a
}

// storageData reads one object through BCS's storage route and decodes its data into
// into, as BCS's clients decode it (keys in any case, unknown keys dropped).
func (c *bcsClient) storageData(ns, typ, name string, into any) {
	c.t.Helper()
	a := c.ok(http.MethodGet, "/bcsapi/v4/storage/mesos/dynamic/namespace_resources/clusters/"+bcsCluster+"/namespaces/"+ns+"/"+typ+"/"+name, nil)
	var item struct {
		ResourceName string          `json:"resourceName"`
		Data         json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(a.Data, &item); err != nil || item.ResourceName != name {
		c.t.Fatalf("storage %s/%s: %v: %s", typ, name, err, a.Data)
	}
	if err := json.Unmarshal(item.Data, into); err != nil {
		c.t.Fatalf("storage %s/%s: %v: %s", typ, name, err, item.Data)
	}
}

// serving waits until owner (a process, or a deployment's applications) has exactly n
// running instances and each answers on its port with a page holding want; it returns
// their PIDs.
func serving(t *testing.T, s *devServer, ns, owner string, deployment bool, n int, want string) []int {
	t.Helper()
	var pids []int
	waitUntil(t, 40*time.Second, strconv.Itoa(n)+" instances of "+owner+" serving "+strconv.Quote(want), func() bool {
		var list struct{ Items []*v4.TaskGroup }
		if err := s.apiGet("/v1/namespaces/"+ns+"/taskgroups", &list); err != nil {
			return false
		}
		pids = pids[:0]
		for _, tg := range list.Items {
			name := tg.Spec.Owner.Name
			if name != owner && !(deployment && strings.HasPrefix(name, owner+"-v")) {
				continue
			}
			if tg.Status.Phase != v4.StatusRunning || tg.Spec.Desired == v4.DesiredStopped {
				return false
			}
			code, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(port(tg, "http")) + "/")
			if err != nil || code != http.StatusOK || !strings.Contains(body, want) {
				return false
			}
			pids = append(pids, pidOf(tg))
		}
		return len(pids) == n
	})
	return slices.Clone(pids)
}

// The migration guide (docs/migrate-from-bcs.md), followed end to end: BCS v4 files
// (docs/examples/bcs) are posted unchanged through BCS's routes with a berth token in
// place of bcs_token, then scaled, updated, read back through BCS's storage routes and
// deleted, and the instances really start, serve what the configmap and the secret hold,
// and stop.
func TestBCSMigrationGuide(t *testing.T) {
	requireRoot(t)
	const ns = "bcs-demo"
	s := startServer(t, t.TempDir(), "--bcs-cluster-id", bcsCluster)
	startAgent(t, s, "node-a", "33400-33499")
	s.cleanupDeployments(ns)
	s.cleanupProcesses(ns)
	file := func(name string) []byte {
		b, err := os.ReadFile("../../docs/examples/bcs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gw := &bcsClient{t: t, s: s.as(teamToken(t, s, ns)), base: s.url}
	const api = "/bcsapi/v4/scheduler/mesos/namespaces/" + ns

	// The credential is what changes: without a token berth answers 401.
	anon := &bcsClient{t: t, s: s.as(""), base: s.url}
	req, _ := http.NewRequest(http.MethodGet, anon.base+api+"/processes", nil)
	req.Header.Set("BCS-ClusterID", bcsCluster)
	if resp, err := anon.s.http.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}

	// validate=strict refuses what the default mode warns about, and writes nothing:
	// through BCS's routes and berth apply alike.
	strict := gw.call(http.MethodPost, api+"/processes?validate=strict", file("process.json"))
	if strict.Code == 0 || !strings.Contains(strict.Message, "checkCmd") {
		t.Errorf("a strict create: code %d %q, want a refusal naming checkCmd", strict.Code, strict.Message)
	}
	if r := s.berth("", "apply", "--validate=strict", "-f", "../../docs/examples/bcs/process.json"); r.code == 0 || !strings.Contains(r.stderr, "checkCmd") {
		t.Errorf("berth apply --validate=strict: exit %d, %s%s; want a refusal naming checkCmd", r.code, r.stdout, r.stderr)
	}
	if a := gw.call(http.MethodGet, api+"/processes/demo-web", nil); a.Code != 1405202 {
		t.Errorf("after the strict refusals: %+v, want no process demo-web", a)
	}

	// bcs-client create, each file unchanged.
	gw.ok(http.MethodPost, api+"/configmaps", file("configmap.json"))
	gw.ok(http.MethodPost, api+"/secrets", file("secret.json"))
	created := gw.ok(http.MethodPost, api+"/processes", file("process.json"))
	if !slices.ContainsFunc(created.Warnings, func(w string) bool { return strings.Contains(w, "checkCmd") }) {
		t.Errorf("creating the process: warnings %q, want one on checkCmd", created.Warnings)
	}
	gw.ok(http.MethodPost, api+"/deployments", file("deployment.json"))
	const page = "v1 hello from a configmap s3cret-from-a-secret"
	serving(t, s, ns, "demo-web", false, 2, page)
	serving(t, s, ns, "demo-api", true, 2, page)

	// bcs-client scale: the process up, the deployment down.
	gw.ok(http.MethodPut, api+"/processes/demo-web/scale/3", nil)
	gw.ok(http.MethodPut, api+"/deployments/demo-api/scale/1", nil)
	serving(t, s, ns, "demo-web", false, 3, page)
	serving(t, s, ns, "demo-api", true, 1, page)

	// bcs-client update with the files edited. The deployment rolls to v2; the process's
	// first ?instances=3 instances are replaced by the update itself, as BCS did (each by a
	// move: the replacement first).
	v2 := func(b []byte) []byte { return bytes.Replace(b, []byte(`"value": "v1"`), []byte(`"value": "v2"`), 1) }
	before := s.taskGroups(ns, "demo-web")
	upd := gw.ok(http.MethodPut, api+"/processes?instances=3", bytes.Replace(v2(file("process.json")), []byte(`"instance": 2`), []byte(`"instance": 3`), 1))
	gw.ok(http.MethodPut, api+"/deployments", bytes.Replace(v2(file("deployment.json")), []byte(`"instance": 2`), []byte(`"instance": 1`), 1))
	const page2 = "v2 hello from a configmap s3cret-from-a-secret"
	// Three moves one after another, each waiting for its replacement to run: generous on
	// a loaded machine.
	waitUntil(t, 120*time.Second, fmt.Sprintf("the update replaced every instance of demo-web (its warnings: %q)", upd.Warnings), func() bool {
		tgs := s.taskGroups(ns, "demo-web")
		return len(tgs) == 3 && !slices.ContainsFunc(tgs, func(x *v4.TaskGroup) bool {
			return slices.ContainsFunc(before, func(b *v4.TaskGroup) bool { return b.Metadata.Name == x.Metadata.Name })
		})
	})
	pids := serving(t, s, ns, "demo-web", false, 3, page2)
	pids = append(pids, serving(t, s, ns, "demo-api", true, 1, page2)...)

	// bcs-client list and inspect read BCS's storage routes.
	var rc struct {
		Metadata        struct{ Name string }
		Kind, Status    string
		Instance        int
		RunningInstance int
	}
	gw.storageData(ns, "process", "demo-web", &rc)
	if rc.Metadata.Name != "demo-web" || rc.Kind != "process" || rc.Instance != 3 || rc.RunningInstance != 3 || rc.Status != "Running" {
		t.Errorf("storage process demo-web: %+v, want demo-web, a process, 3 instances Running", rc)
	}
	var dep bcswire.Deployment
	waitUntil(t, 20*time.Second, "the deployment's update recorded as done", func() bool {
		gw.storageData(ns, "deployment", "demo-api", &dep)
		return dep.Status == "Running" && !dep.IsInRolling
	})
	if dep.Strategy.RollingUpdate == nil || dep.Strategy.RollingUpdate.MaxUnavilable != 1 {
		t.Errorf("storage deployment demo-api: strategy %+v, want maxUnavilable 1", dep.Strategy)
	}
	list := gw.ok(http.MethodGet, "/bcsapi/v4/storage/query/mesos/dynamic/clusters/"+bcsCluster+"/configmap?namespace="+ns, nil)
	if !strings.Contains(string(list.Data), `"resourceName":"demo-config"`) {
		t.Errorf("storage list of configmaps: %s, want demo-config", list.Data)
	}

	// bcs-client delete: a configmap in use is refused until its users are gone (or with
	// enforce=1), then everything goes and every instance stops.
	if a := gw.call(http.MethodDelete, api+"/configmaps/demo-config", nil); a.Code == 0 {
		t.Errorf("deleting a configmap in use: %+v, want a refusal", a)
	}
	gw.ok(http.MethodDelete, api+"/processes/demo-web", nil)
	gw.ok(http.MethodDelete, api+"/deployments/demo-api", nil)
	waitUntil(t, 30*time.Second, "no task groups in "+ns, func() bool {
		var list struct{ Items []*v4.TaskGroup }
		return s.apiGet("/v1/namespaces/"+ns+"/taskgroups", &list) == nil && len(list.Items) == 0
	})
	// The deployment's application goes once its instances have: until then the
	// configmap is still in use, and a refused delete changes nothing.
	waitUntil(t, 10*time.Second, "the configmap deleted", func() bool {
		return gw.call(http.MethodDelete, api+"/configmaps/demo-config", nil).Code == 0
	})
	gw.ok(http.MethodDelete, api+"/secrets/demo-secret", nil)
	waitUntil(t, 10*time.Second, "every instance's process gone", func() bool {
		return !slices.ContainsFunc(pids, alive)
	})
}
