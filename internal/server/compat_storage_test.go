package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/compat/bcs"
)

// storageItemAnswer is one of BCS storage's documents as bcs-client reads it.
type storageItemAnswer struct {
	ClusterID    string          `json:"clusterId"`
	Namespace    string          `json:"namespace"`
	ResourceName string          `json:"resourceName"`
	ResourceType string          `json:"resourceType"`
	Data         json.RawMessage `json:"data"`
}

func storageItems(t *testing.T, a bcsAnswer) []storageItemAnswer {
	t.Helper()
	wantBCS(t, a, 0)
	var items []storageItemAnswer
	if err := json.Unmarshal(a.Data, &items); err != nil {
		t.Fatalf("storage list data: %v: %s", err, a.Data)
	}
	return items
}

// bcs-client's list, inspect, apply and clean read BCS's storage: berth serves those
// reads from its state through /v1, so a one-namespace token lists its namespace only,
// is refused another's with BCS's 403 envelope, never reads a secret's value in a list,
// and an absent object answers as BCS storage answered it.
func TestBCSStorage(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, doc := range []string{procJSON("ba", "web", 1), procJSON("bb", "web", 1), procJSON("ba", "api", 1),
		secretJSON("ba", "pw", "k"), secretJSON("bb", "pw", "k")} {
		wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", doc), http.StatusOK)
	}
	query := url + bcs.StoragePrefix + "/query/mesos/dynamic/clusters/BCS-MESOS-10001/"
	inspect := url + bcs.StoragePrefix + "/mesos/dynamic/namespace_resources/clusters/BCS-MESOS-10001/namespaces/"

	all := storageItems(t, bcsCall(t, http.MethodPost, query+"process", `{}`, ""))
	if len(all) != 3 {
		t.Fatalf("every process: %+v", all)
	}
	var rc struct {
		Meta struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Instance int    `json:"instance"`
		Kind     string `json:"kind"`
	}
	if err := json.Unmarshal(all[0].Data, &rc); err != nil || rc.Meta.Name == "" || rc.Instance != 1 || rc.Kind != "process" ||
		all[0].ResourceType != "process" || all[0].ClusterID != "BCS-MESOS-10001" {
		t.Errorf("a process in storage's shape: %v %+v %+v", err, all[0], rc)
	}

	tok := tokenWithPolicy(t, url, tenantBA, "tenant-ba", "")
	mine := storageItems(t, bcsCall(t, http.MethodPost, query+"process", `{}`, tok))
	if len(mine) != 2 || mine[0].Namespace != "ba" || mine[1].Namespace != "ba" {
		t.Errorf("a ba token's list: %+v", mine)
	}
	// bcs-client's list of every namespace: the token's own only.
	if a := bcsCall(t, http.MethodGet, query+"namespace", "", tok); a.Code != 0 || string(a.Data) != `["ba"]` {
		t.Errorf("a ba token's namespaces: %+v %s", a, a.Data)
	}
	named := storageItems(t, bcsCall(t, http.MethodPost, query+"process", `{"namespace":"ba","name":"api"}`, tok))
	if len(named) != 1 || named[0].ResourceName != "api" {
		t.Errorf("a list by namespace and name: %+v", named)
	}
	for _, c := range []struct{ method, url, body string }{
		{http.MethodPost, query + "process", `{"namespace":"bb"}`},
		{http.MethodGet, query + "secret?namespace=ba,bb", ""},
		{http.MethodGet, inspect + "bb/process/web", ""},
		{http.MethodGet, inspect + "bb/secret/pw", ""},
	} {
		a := bcsCall(t, c.method, c.url, c.body, tok)
		if a.status != http.StatusForbidden || a.Result || !strings.Contains(a.Message, "may not") {
			t.Errorf("a ba token, %s %s: HTTP %d %+v", c.method, c.url, a.status, a)
		}
	}

	a := bcsCall(t, http.MethodGet, inspect+"ba/process/web", "", tok)
	wantBCS(t, a, 0)
	var one storageItemAnswer
	if err := json.Unmarshal(a.Data, &one); err != nil || one.ResourceName != "web" || one.Namespace != "ba" {
		t.Errorf("inspect ba/web: %v %s", err, a.Data)
	}
	// Absent: HTTP 200, a failure whose message bcs-client's apply reads as absence.
	for _, typ := range []string{"application", "process", "deployment", "service", "configmap", "secret", "taskgroup"} {
		a := bcsCall(t, http.MethodGet, inspect+"ba/"+typ+"/nothing", "", tok)
		if a.status != http.StatusOK || a.Result || a.Code != bcs.CodeNotFound || !strings.Contains(a.Message, "resource does not exist") {
			t.Errorf("absent %s: HTTP %d %+v", typ, a.status, a)
		}
	}

	// A list of secrets carries no values; a get does, to a token that may read secrets.
	secrets := storageItems(t, bcsCall(t, http.MethodPost, query+"secret", `{"namespace":"ba"}`, tok))
	if len(secrets) != 1 || strings.Contains(string(secrets[0].Data), "aGk=") {
		t.Errorf("a list of secrets: %+v", secrets)
	}
	if a := bcsCall(t, http.MethodGet, inspect+"ba/secret/pw", "", tok); a.Code != 0 || !strings.Contains(string(a.Data), "aGk=") {
		t.Errorf("a get of a secret by a token that reads secrets: %+v", a)
	}
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	if a := bcsCall(t, http.MethodGet, inspect+"ba/secret/pw", "", ro); a.status != http.StatusForbidden || strings.Contains(string(a.Data), "aGk=") {
		t.Errorf("a get of a secret by a read-only token: HTTP %d %+v", a.status, a)
	}

	// Bounded: a page at most, the rest by offset, named in a warning.
	a = bcsCall(t, http.MethodGet, query+"process?limit=1&offset=1", "", "")
	if page := storageItems(t, a); len(page) != 1 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "offset=2") {
		t.Errorf("limit=1&offset=1: %+v %v", page, a.Warnings)
	}
	for _, q := range []string{"limit=501", "limit=0", "offset=-1", "limit=x"} {
		a := bcsCall(t, http.MethodGet, query+"process?"+q, "", tok)
		if a.Code != bcs.CodeBadRequestData || !strings.Contains(a.Message, strings.SplitN(q, "=", 2)[0]) {
			t.Errorf("%s: %+v", q, a)
		}
	}
	if a := bcsCall(t, http.MethodPost, query+"process", `not json`, tok); a.Code != bcs.CodeJSONDecode {
		t.Errorf("conditions not JSON: %+v", a)
	}
	if a := bcsCall(t, http.MethodGet, query+"endpoint", "", tok); a.Code != bcs.CodeDriverParameter || !strings.Contains(a.Message, "endpoint") {
		t.Errorf("a type not served: %+v", a)
	}
	a = bcsCall(t, http.MethodGet, url+bcs.StoragePrefix+"/query/mesos/dynamic/clusters/BCS-MESOS-99999/process", "", tok)
	if a.status != http.StatusBadRequest || a.Code != bcs.CodeHeaderCheck {
		t.Errorf("another cluster in the path than the header: HTTP %d %+v", a.status, a)
	}
}
