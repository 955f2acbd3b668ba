package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

const (
	crontabCRD = `{"apiVersion":"v4","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.bkbcs.tencent.com"},
 "spec":{"group":"bkbcs.tencent.com","version":"v1","scope":"Namespaced","names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","shortNames":["ct"]}}}`
	crontabs = "/customresources/bkbcs.tencent.com/v1/namespaces/"
)

func crontab(ns, name, spec string) string {
	return `{"apiVersion":"bkbcs.tencent.com/v1","kind":"CronTab","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":` + spec + `}`
}

// kubeCall calls one of BCS's custom resource routes, which answer Kubernetes' shapes, and
// decodes the answer strictly into into.
func kubeCall(t *testing.T, method, url, body, token string, into any) int {
	t.Helper()
	r := callWith(t, "", method, url, body, token, http.Header{"Bcs-Clusterid": {"BCS-MESOS-10001"}, "Content-Type": {"application/json"}})
	if err := bcswire.Decode(r.body, into); err != nil {
		t.Fatalf("%s %s: %v: %s", method, url, err, r.body)
	}
	return r.code
}

// bcs-client's custom resource commands, route by route: create, list and inspect a
// definition; create, list, get, update and delete a resource; a resource of an undefined
// kind and a definition deleted while it has resources are refused with a Status.
func TestBCSCustomResources(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + bcs.GatewayPrefix
	var st bcswire.KubeStatus
	if code := kubeCall(t, http.MethodPost, base+crontabs+"bcs/crontabs", crontab("bcs", "c1", `{"cron":"* * * * *"}`), "", &st); code != 404 || st.Kind != "Status" || st.Reason != "NotFound" {
		t.Fatalf("a resource of an undefined kind: %d %+v", code, st)
	}
	var crd bcswire.CustomResourceDefinition
	if code := kubeCall(t, http.MethodPost, base+"/customresourcedefinitions", crontabCRD, "", &crd); code != 201 || crd.Metadata.UID == "" {
		t.Fatalf("create: %d %+v", code, crd)
	}
	var crds bcswire.CustomResourceDefinitionList
	if code := kubeCall(t, http.MethodGet, base+"/customresourcedefinitions", "", "", &crds); code != 200 || len(crds.Items) != 1 ||
		crds.Items[0].Spec.Group+"/"+crds.Items[0].Spec.Version != "bkbcs.tencent.com/v1" || crds.Items[0].Spec.Names.Singular != "crontab" {
		t.Fatalf("list: %d %+v", code, crds)
	}
	kubeCall(t, http.MethodGet, base+"/customresourcedefinitions/crontabs.bkbcs.tencent.com", "", "", &crd)
	updated := strings.Replace(crontabCRD, `"metadata":{`, `"metadata":{"resourceVersion":"`+crd.Metadata.ResourceVersion+`",`, 1)
	if code := kubeCall(t, http.MethodPut, base+"/customresourcedefinitions/crontabs.bkbcs.tencent.com", updated, "", &crd); code != 200 {
		t.Fatalf("update of the definition: %d %+v", code, crd)
	}

	var cr bcswire.CustomResource
	if code := kubeCall(t, http.MethodPost, base+crontabs+"bcs/crontabs", crontab("bcs", "c1", `{"cron":"* * * * *"}`), "", &cr); code != 201 || cr.Metadata.Namespace != "bcs" {
		t.Fatalf("create: %d %+v", code, cr)
	}
	if code := kubeCall(t, http.MethodPost, base+crontabs+"bcs/crontabs", crontab("bcs", "c1", `{}`), "", &st); code != 409 || st.Reason != "AlreadyExists" {
		t.Fatalf("second create: %d %+v", code, st)
	}
	// bcs-client's update sends the stored metadata with the new document.
	kubeCall(t, http.MethodGet, base+crontabs+"bcs/crontabs/c1", "", "", &cr)
	next := `{"apiVersion":"bkbcs.tencent.com/v1","kind":"CronTab","metadata":{"name":"c1","namespace":"bcs","resourceVersion":"` + cr.Metadata.ResourceVersion + `","uid":"` + cr.Metadata.UID + `"},"spec":{"cron":"0 * * * *"}}`
	if code := kubeCall(t, http.MethodPut, base+crontabs+"bcs/crontabs/c1", next, "", &cr); code != 200 || string(cr.Spec) != `{"cron":"0 * * * *"}` {
		t.Fatalf("update: %d %+v", code, cr)
	}
	if code := kubeCall(t, http.MethodPut, base+crontabs+"bcs/crontabs/c1", next, "", &st); code != 409 {
		t.Fatalf("update of a stale version: %d %+v", code, st)
	}
	var list bcswire.CustomResourceList
	for _, p := range []string{crontabs + "bcs/crontabs", "/customresources/bkbcs.tencent.com/v1/crontabs"} {
		if code := kubeCall(t, http.MethodGet, base+p, "", "", &list); code != 200 || len(list.Items) != 1 || list.Items[0].Metadata.Name != "c1" {
			t.Fatalf("list %s: %d %+v", p, code, list)
		}
	}
	if code := kubeCall(t, http.MethodDelete, base+"/customresourcedefinitions/crontabs.bkbcs.tencent.com", "", "", &st); code != 409 || !strings.Contains(st.Message, "delete them first") {
		t.Fatalf("delete of a definition in use: %d %+v", code, st)
	}
	if code := kubeCall(t, http.MethodDelete, base+crontabs+"bcs/crontabs/c1", "", "", &cr); code != 200 || cr.Metadata.Name != "c1" {
		t.Fatalf("delete: %d %+v", code, cr)
	}
	if code := kubeCall(t, http.MethodDelete, base+"/customresourcedefinitions/crontabs.bkbcs.tencent.com", "", "", &crd); code != 200 {
		t.Fatalf("delete of the definition: %d %+v", code, crd)
	}
}

// A token limited to one namespace writes its namespace's custom resources through
// BCS's routes, and reads or writes no other namespace's, nor the definitions.
func TestBCSCustomResourcesNamespaceToken(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + bcs.GatewayPrefix
	var crd bcswire.CustomResourceDefinition
	if code := kubeCall(t, http.MethodPost, base+"/customresourcedefinitions", crontabCRD, "", &crd); code != 201 {
		t.Fatalf("create: %d", code)
	}
	var cr bcswire.CustomResource
	// The name has hyphens so that no random token name ("berth-acl-" and six
	// letters or digits) quoted in a refusal can contain it by chance.
	if code := kubeCall(t, http.MethodPost, base+crontabs+"team-b/crontabs", crontab("team-b", "only-in-b", `{}`), "", &cr); code != 201 {
		t.Fatalf("create: %d", code)
	}
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	if code := kubeCall(t, http.MethodPost, base+crontabs+"team-a/crontabs", crontab("team-a", "a1", `{}`), tok, &cr); code != 201 {
		t.Fatalf("its own namespace: %d", code)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, crontabs + "team-b/crontabs/only-in-b", ""},
		{http.MethodGet, crontabs + "team-b/crontabs", ""},
		{http.MethodGet, "/customresources/bkbcs.tencent.com/v1/crontabs", ""},
		{http.MethodPost, crontabs + "team-b/crontabs", crontab("team-b", "x", `{}`)},
		{http.MethodPut, crontabs + "team-b/crontabs/only-in-b", crontab("team-b", "only-in-b", `{"x":1}`)},
		{http.MethodDelete, crontabs + "team-b/crontabs/only-in-b", ""},
		{http.MethodGet, "/customresourcedefinitions", ""},
		{http.MethodDelete, "/customresourcedefinitions/crontabs.bkbcs.tencent.com", ""},
	} {
		var st bcswire.KubeStatus
		if code := kubeCall(t, c.method, base+c.path, c.body, tok, &st); code != 403 || st.Reason != "Forbidden" || strings.Contains(st.Message, "only-in-b") && c.method == http.MethodGet {
			t.Errorf("%s %s: %d %+v", c.method, c.path, code, st)
		}
	}
}
