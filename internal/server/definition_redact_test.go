package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/store"
)

// redactNS holds an application whose definition carries an image pull password and a
// configmap whose remote file's URL and remotePasswd carry one.
const (
	redactNS  = "redact"
	redactApp = `{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"redact"},
 "spec":{"instance":1,"template":{"spec":{"containers":[{"image":"r.example/app:1","imagePullUser":"bob","imagePullPasswd":"HUNTER2-pull",
  "args":["--from","https://bob:HUNTER2-url@r.example/x"],"resources":{"limits":{"cpu":"0.1","memory":"64"}}}]}}}}`
	redactCM = `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"cfg","namespace":"redact"},
 "datas":{"f":{"type":"https","content":"https://bob:HUNTER2-cm@r.example/f","remoteUser":"bob","remotePasswd":"HUNTER2-remote"}}}`
)

// A token that may read a workload or a configmap, and not secrets, reads their
// definitions, BCS's definition and version, and BCS's configmap reads with the
// credentials masked; what was applied keeps them.
func TestDefinitionCredentialsAreMasked(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", redactApp+"\n"+redactCM), http.StatusOK)
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	leaks := func(what string, body []byte) {
		t.Helper()
		for _, s := range []string{"HUNTER2-pull", "HUNTER2-url", "HUNTER2-cm", "HUNTER2-remote"} {
			if strings.Contains(string(body), s) {
				t.Errorf("%s shows %s: %s", what, s, body)
			}
		}
	}
	r := callAs(t, "", http.MethodGet, url+"/v1/namespaces/redact/applications/web/definition", "", ro)
	wantStatus(t, r, http.StatusOK)
	leaks("the definition", r.body)
	if !strings.Contains(string(r.body), `"imagePullPasswd":"******"`) || !strings.Contains(string(r.body), `https://bob:******@r.example/x`) {
		t.Errorf("the definition is not masked in place: %s", r.body)
	}
	r = callAs(t, "", http.MethodGet, url+"/v1/namespaces/redact/configmaps/cfg/definition", "", ro)
	wantStatus(t, r, http.StatusOK)
	leaks("the configmap's definition", r.body)

	gw := url + bcs.GatewayPrefix
	a := bcsCall(t, http.MethodGet, gw+"/definition/application/redact/web", "", ro)
	wantBCS(t, a, bcs.CodeSuccess)
	leaks("BCS's definition", a.Data)
	a = bcsCall(t, http.MethodGet, gw+"/namespaces/redact/applications/web/versions", "", ro)
	wantBCS(t, a, bcs.CodeSuccess)
	id := strings.Trim(string(a.Data), `[]"`)
	a = bcsCall(t, http.MethodGet, gw+"/namespaces/redact/applications/web/versions/"+id, "", ro)
	wantBCS(t, a, bcs.CodeSuccess)
	leaks("BCS's version", a.Data)
	if !strings.Contains(string(a.Data), `"raw_json"`) {
		t.Errorf("the version has no raw_json: %s", a.Data)
	}
	for _, p := range []string{"/namespaces/redact/configmaps/cfg", "/namespaces/redact/configmaps"} {
		a = bcsCall(t, http.MethodGet, gw+p, "", ro)
		wantBCS(t, a, bcs.CodeSuccess)
		leaks("BCS's "+p, a.Data)
	}
	storage := url + bcs.StoragePrefix
	for _, p := range []string{"/query/mesos/dynamic/clusters/BCS-MESOS-10001/configmap", "/mesos/dynamic/namespace_resources/clusters/BCS-MESOS-10001/namespaces/redact/configmap/cfg"} {
		a = bcsCall(t, http.MethodGet, storage+p, "", ro)
		wantBCS(t, a, bcs.CodeSuccess)
		leaks("BCS storage's "+p, a.Data)
	}

	// A deployment's revisions are stored definitions too.
	dep := `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"api","namespace":"redact"},"spec":{"instance":1,"selector":{"app":"api"},
 "template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"image":"r.example/api:1","imagePullUser":"bob","imagePullPasswd":"HUNTER2-pull",
  "resources":{"limits":{"cpu":"0.1","memory":"64"}}}]}}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", dep), http.StatusOK)
	d := getDeployment(t, redactNS, "api")
	d.Status = v4.DeploymentStatus{Revision: 1, History: []v4.DeploymentRevision{{Revision: 1, Hash: v4.TemplateHash(d.Spec.Template), Template: *d.Spec.Template}}}
	if err := testStore.Update(context.Background(), d, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	r = callAs(t, "", http.MethodGet, url+"/v1/namespaces/redact/deployments/api/history", "", ro)
	wantStatus(t, r, http.StatusOK)
	leaks("the deployment's history", r.body)
	if !strings.Contains(string(r.body), `"imagePullPasswd":"******"`) {
		t.Errorf("the history is not masked in place: %s", r.body)
	}
	a = bcsCall(t, http.MethodGet, gw+"/definition/deployment/redact/api", "", ro)
	wantBCS(t, a, bcs.CodeSuccess)
	leaks("BCS's deployment definition", a.Data)

	// What was applied is unchanged: the stored object keeps the password it pulls with.
	obj, err := testStore.Get(context.Background(), v4.KindApplication, redactNS, "web")
	if err != nil {
		t.Fatal(err)
	}
	if pod := v4.PodSpecOf(obj); pod == nil || pod.Containers[0].ImagePullPasswd != "HUNTER2-pull" {
		t.Errorf("the stored application lost its pull password: %+v", pod)
	}
}
