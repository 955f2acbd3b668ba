package server

import (
	"context"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

const depJSON = `{"apiVersion":"v4","kind":"dependency","metadata":{"name":"logagent","namespace":"infra"},
	"spec":{"template":{"spec":{"processes":[{"procName":"agent","startCmd":"./agent"}]}}}}`

// dependentTG writes a task group of process shop/web declaring infra/logagent.
func dependentTG(t *testing.T, name, phase, desired string) {
	t.Helper()
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Node: "node-1", Desired: desired,
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web"}},
				Dependencies: []v4.DependencyRef{{Name: "logagent", Namespace: "infra", Policy: v4.DependencyPolicyNode}}}}},
		Status: v4.TaskGroupStatus{Phase: phase}}
	if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteDependencyInUse(t *testing.T) {
	base := newTestServer(t, Config{})
	url := base + "/v1/namespaces/infra/dependencies/logagent"
	wantStatus(t, call(t, "POST", base+"/v1/namespaces/infra/dependencies", depJSON), 201)
	dependentTG(t, "0.web.shop.berth.1", v4.StatusRunning, v4.DesiredRunning)
	dependentTG(t, "1.web.shop.berth.1", v4.StatusFailed, v4.DesiredRunning)  // ended: no reference
	dependentTG(t, "2.web.shop.berth.1", v4.StatusRunning, v4.DesiredStopped) // being stopped: none either

	cases := []struct {
		name  string
		query string
		code  int
		msg   string
	}{
		{"in use", "", 409, "used by 1 task group (process shop/web)"},
		{"force not a boolean", "?force=yes-please", 400, "force"},
		{"force=false", "?force=false", 409, "?force=true"},
		{"forced", "?force=true", 200, ""},
		{"gone", "", 404, ""},
	}
	for _, tc := range cases {
		r := call(t, "DELETE", url+tc.query, "")
		wantStatus(t, r, tc.code)
		if tc.msg != "" && !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("%s: body %s, want %q", tc.name, r.body, tc.msg)
		}
		if tc.code == 409 {
			if _, err := testStore.Get(context.Background(), v4.KindDependency, "infra", "logagent"); err != nil {
				t.Fatalf("%s: a refused delete removed the dependency: %v", tc.name, err)
			}
		}
	}

	// Without dependents the delete needs no force.
	wantStatus(t, call(t, "POST", base+"/v1/namespaces/infra/dependencies", depJSON), 201)
	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, "shop", "0.web.shop.berth.1", ""); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, call(t, "DELETE", url, ""), 200)
}
