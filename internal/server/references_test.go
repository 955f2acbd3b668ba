package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// refProcJSON is process ns/name whose task injects configmap cm's key cmKey and secret
// sec's key secKey.
func refProcJSON(ns, name, cm, cmKey, sec, secKey string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web",`+
		`"configmaps":[{"name":%q,"items":[{"type":"env","dataKey":%q,"keyOrPath":"A"}]}],`+
		`"secrets":[{"secretName":%q,"items":[{"type":"env","dataKey":%q,"keyOrPath":"B"}]}]}]}}}}`, name, ns, cm, cmKey, sec, secKey)
}

func secretJSON(ns, name, key string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":%q,"namespace":%q},"datas":{%q:{"content":"aGk="}}}`, name, ns, key)
}

// A workload that names a configmap, a secret or a key that does not exist is refused
// with each path named, and nothing is written; one whose references are stored, or in
// the same stream, is accepted.
func TestReferencesAreCheckedAtAdmission(t *testing.T) {
	base := newTestServer(t, Config{})
	const ns = "refs"
	for _, tc := range []struct {
		name, body string
		status     int
		want       []string
	}{
		{"nothing exists", refProcJSON(ns, "a", "cfg", "k", "sec", "password"), http.StatusUnprocessableEntity,
			[]string{"processes[0].configmaps[0].name: configmap refs/cfg does not exist", "processes[0].secrets[0].secretName: secret refs/sec does not exist"}},
		{"in the same stream", cmJSON(ns, "cfg", "eA==") + "\n" + secretJSON(ns, "sec", "password") + "\n" + refProcJSON(ns, "b", "cfg", "k", "sec", "password"),
			http.StatusOK, nil},
		{"a missing key", refProcJSON(ns, "c", "cfg", "nokey", "sec", "password"), http.StatusUnprocessableEntity,
			[]string{`processes[0].configmaps[0].items[0].dataKey: configmap refs/cfg has no key "nokey"`}},
		{"stored", refProcJSON(ns, "d", "cfg", "k", "sec", "password"), http.StatusOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, http.MethodPost, base+"/v1/apply", tc.body)
			wantStatus(t, r, tc.status)
			var body struct {
				Error struct {
					Details v4.FieldErrors `json:"details"`
				} `json:"error"`
			}
			json.Unmarshal(r.body, &body)
			said := body.Error.Details.Error()
			for _, w := range tc.want {
				if !strings.Contains(said, w) {
					t.Errorf("the answer does not say %q:\n%s", w, r.body)
				}
			}
		})
	}
	// The create route checks the same; a refused workload was not written.
	r := call(t, http.MethodPost, base+"/v1/namespaces/"+ns+"/processes", refProcJSON(ns, "e", "other", "k", "sec", "password"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantStatus(t, call(t, http.MethodGet, base+"/v1/namespaces/"+ns+"/processes/a", ""), http.StatusNotFound)
}

// A configmap or a secret that a workload names cannot be deleted unless forced; one
// that none names can.
func TestConfigInUseIsNotDeleted(t *testing.T) {
	base := newTestServer(t, Config{})
	const ns = "refs-del"
	wantStatus(t, call(t, http.MethodPost, base+"/v1/apply", cmJSON(ns, "cfg", "eA==")+"\n"+cmJSON(ns, "spare", "eA==")+"\n"+
		secretJSON(ns, "sec", "password")+"\n"+refProcJSON(ns, "web", "cfg", "k", "sec", "password")), http.StatusOK)
	for _, path := range []string{"/configmaps/cfg", "/secrets/sec"} {
		r := call(t, http.MethodDelete, base+"/v1/namespaces/"+ns+path, "")
		wantStatus(t, r, http.StatusConflict)
		if !strings.Contains(string(r.body), "is used by process refs-del/web") {
			t.Errorf("delete %s: %s", path, r.body)
		}
		var e v4.ErrorBody
		if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil ||
			!reflect.DeepEqual(e.Error.UsedBy, []v4.ObjectRef{{Kind: v4.KindProcess, Namespace: ns, Name: "web"}}) {
			t.Errorf("delete %s: usedBy: %v %s", path, err, r.body)
		}
	}
	wantStatus(t, call(t, http.MethodDelete, base+"/v1/namespaces/"+ns+"/configmaps/spare", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodDelete, base+"/v1/namespaces/"+ns+"/configmaps/cfg?force=true", ""), http.StatusOK)
}

// The usedBy of a configmap that more workloads name than MaxUsedBy lists the first
// MaxUsedBy; the message names every one.
func TestConfigInUseUsedByIsBounded(t *testing.T) {
	base := newTestServer(t, Config{})
	const ns = "refs-many"
	docs := []string{cmJSON(ns, "cfg", "eA=="), secretJSON(ns, "sec", "password")}
	for i := range v4.MaxUsedBy + 1 {
		docs = append(docs, refProcJSON(ns, fmt.Sprintf("p%03d", i), "cfg", "k", "sec", "password"))
	}
	wantStatus(t, call(t, http.MethodPost, base+"/v1/apply", strings.Join(docs, "\n")), http.StatusOK)
	r := call(t, http.MethodDelete, base+"/v1/namespaces/"+ns+"/configmaps/cfg", "")
	wantStatus(t, r, http.StatusConflict)
	var e v4.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil || len(e.Error.UsedBy) != v4.MaxUsedBy {
		t.Fatalf("usedBy of %d users: %v %s", v4.MaxUsedBy+1, err, r.body)
	}
	if last := fmt.Sprintf("process %s/p%03d", ns, v4.MaxUsedBy); !strings.Contains(e.Error.Message, last) {
		t.Errorf("the message does not name %s: %s", last, e.Error.Message)
	}
}

// A container's image pull secret must exist and hold a docker config, as a secret item
// must exist; one in use is not deleted.
func TestPullSecretReferences(t *testing.T) {
	base := newTestServer(t, Config{})
	const ns = "refs-pull"
	app := func(name, secret string) string {
		return fmt.Sprintf(`{"apiVersion":"v4","kind":"application","metadata":{"name":%q,"namespace":%q},"spec":{"instance":1,"template":{"spec":{"containers":[`+
			`{"image":"r.local:5000/app:1","imagePullSecrets":[{"name":%q}]}]}}}}`, name, ns, secret)
	}
	// base64 of {"auths":{"r.local:5000":{"username":"a","password":"b"}}}
	const config = "eyJhdXRocyI6eyJyLmxvY2FsOjUwMDAiOnsidXNlcm5hbWUiOiJhIiwicGFzc3dvcmQiOiJiIn19fQ=="
	regcred := fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"regcred","namespace":%q},"type":%q,"datas":{%q:{"content":%q}}}`,
		ns, v4.SecretTypeDockerConfigJSON, v4.DockerConfigJSONKey, config)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"missing", app("a", "regcred"), http.StatusUnprocessableEntity, "containers[0].imagePullSecrets[0].name: secret refs-pull/regcred does not exist"},
		{"not a docker config", secretJSON(ns, "plain", "password") + "\n" + app("b", "plain"), http.StatusUnprocessableEntity,
			"containers[0].imagePullSecrets[0].name: secret refs-pull/plain is not a docker config secret"},
		{"in the same stream", regcred + "\n" + app("c", "regcred"), http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, http.MethodPost, base+"/v1/apply", tc.body)
			wantStatus(t, r, tc.status)
			if !strings.Contains(string(r.body), tc.want) {
				t.Errorf("the answer does not say %q:\n%s", tc.want, r.body)
			}
		})
	}
	r := call(t, http.MethodDelete, base+"/v1/namespaces/"+ns+"/secrets/regcred", "")
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(string(r.body), "is used by application refs-pull/c") {
		t.Errorf("delete: %s", r.body)
	}
}
