package server

import (
	"net/http"
	"strings"
	"testing"
)

// lifecycleApp is a tenant's application of namespace nt with the given container JSON
// after its main container "web".
func lifecycleApp(webExtra, more string) string {
	return `{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"nt"},
	"spec":{"instance":1,"template":{"spec":{"networkMode":"BRIDGE","containers":[
	{"name":"web","image":"busybox:1","ports":[{"name":"http","containerPort":8080}]` + webExtra + `}` + more + `]}}}}`
}

// podVolumeApp is lifecycleApp's application with the pod volume "v" (source: its JSON),
// mounted by web at mountPath (the rest of the mount's JSON may follow it).
func podVolumeApp(source, mountPath string) string {
	doc := lifecycleApp(`,"resources":{"limits":{"cpu":"0.1","memory":"64"}},"volumes":[{"volume":{"podVolume":"v","mountPath":"`+mountPath+`"}}]`, "")
	return strings.Replace(doc, `"containers":[`, `"volumes":[{"name":"v",`+source+`}],"containers":[`, 1)
}

// A namespace's token cannot use a hook, a role or a probe to reach what is not its task
// (another port of the node, the agent, etcd) nor to hold the agent: each is refused at
// admission with the field named, and nothing is stored.
func TestTenantLifecycleFieldsAtAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	const c0 = "spec.template.spec.containers[0]"
	for _, tc := range []struct{ name, doc, field, msg string }{
		{"a hook on etcd's port", lifecycleApp(`,"lifecycle":{"preStop":{"httpGet":{"port":2379}}}`, ""), c0 + ".lifecycle.preStop.httpGet.port", "not one of the task's ports"},
		{"a hook on another task's port", lifecycleApp("", `,{"name":"side","image":"busybox:1","lifecycle":{"postStart":{"httpGet":{"portName":"http"}}}}`),
			"spec.template.spec.containers[1].lifecycle.postStart.httpGet.portName", "not declared"},
		{"a hook that holds the agent", lifecycleApp(`,"lifecycle":{"preStop":{"exec":{"command":"sleep 1d"},"timeoutSeconds":86400}}`, ""), c0 + ".lifecycle.preStop.timeoutSeconds", "must be 0"},
		{"an init sidecar", lifecycleApp("", `,{"name":"x","image":"busybox:1","lifecycle":{"init":true,"sidecar":true}}`), "spec.template.spec.containers[1].lifecycle.sidecar", "cannot also be a sidecar"},
		{"the holder's name", lifecycleApp("", `,{"name":"berth-network","image":"busybox:1"}`), "spec.template.spec.containers[1].name", "holds the pod's network"},
		{"a configmap file outside its volume", podVolumeApp(`"configMap":{"name":"cfg","items":[{"key":"k","path":"../../etc/cron.d/x"}]}`, "/c"),
			"spec.template.spec.volumes[0].configMap.items[0].path", ".."},
		{"a pod volume with a host path", podVolumeApp(`"emptyDir":{}`, `/c","hostPath":"/etc`),
			c0 + ".volumes[0].volume.hostPath", "must be empty"},
		{"a memory volume larger than the pod", podVolumeApp(`"emptyDir":{"medium":"Memory","sizeLimit":"1000000"}`, "/m"),
			"spec.template.spec.volumes[0].emptyDir.sizeLimit", "over the pod's memory"},
		{"a FlexVolume driver path", podVolumeApp(`"flexVolume":{"driver":"../../../bin/sh"}`, "/f"),
			"spec.template.spec.volumes[0].flexVolume.driver", `must be "vendor/driver"`},
		{"a server check with a role", lifecycleApp(`,"healthChecks":[{"type":"REMOTE_TCP","role":"readiness","tcp":{"portName":"http"}}]`, ""), c0 + ".healthChecks[0].role", "only a local check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := callAs(t, "", http.MethodPost, url+"/v1/namespaces/nt/applications", tc.doc, tenant)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			found := false
			for _, d := range decodeError(t, r).Details {
				found = found || d.Field == tc.field && strings.Contains(d.Message, tc.msg)
			}
			if !found {
				t.Fatalf("details %+v, want %s: ...%s...", decodeError(t, r).Details, tc.field, tc.msg)
			}
			wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/nt/applications/web", "", tenant), http.StatusNotFound)
		})
	}
	ok := lifecycleApp(`,"lifecycle":{"preStop":{"httpGet":{"portName":"http","path":"/drain"}}}`,
		`,{"name":"migrate","image":"busybox:1","lifecycle":{"init":true}}`)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/nt/applications", ok, tenant), http.StatusCreated)
}
