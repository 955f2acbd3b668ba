package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func createGPUNode(t *testing.T, name string, cards int, memMiB int) {
	t.Helper()
	createNode(t, name, func(n *v4.Node) {
		for i := range cards {
			n.Spec.GPUs = append(n.Spec.GPUs, v4.NodeGPU{UUID: fmt.Sprintf("GPU-%s-%d", name, i), Index: i, Minor: i, Model: "T4", MemoryMiB: memMiB, NUMANode: -1})
		}
	})
}

func gpuAppJSON(name string, cores, memUnits int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"application","metadata":{"name":%q,"namespace":"gpu"},"spec":{"instance":1,"template":{"spec":{"containers":[`+
		`{"image":"busybox","resources":{"limits":{"cpu":"1","memory":"64"},"extendedResources":[{"name":"tencent.com/vcuda-core","value":%d},{"name":"tencent.com/vcuda-memory","value":%d}]}}]}}}}`,
		name, cores, memUnits)
}

// TestGPUShareAdmission: a share asking more memory than any card of the cluster has is
// refused at apply, naming the field; one that fits is planned on a card.
func TestGPUShareAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	// Without cards in the cluster nothing is refused: the plan explains.
	r := call(t, http.MethodPost, url+"/v1/plan", gpuAppJSON("early", 30, 64))
	wantStatus(t, r, http.StatusOK)

	createGPUNode(t, "gpu-1", 2, 16384)
	res := planUntil(t, url, gpuAppJSON("small", 30, 16), func(p v4.PlanResult) bool {
		return len(p.Results) == 1 && len(p.Results[0].Placements) == 1
	})
	if p := res.Results[0].Placements; len(p) != 1 || len(p[0].GPUs) != 1 || p[0].GPUs[0].Cores != 30 || p[0].GPUs[0].MemoryMiB != 4096 {
		t.Fatalf("plan %+v", res.Results[0])
	}
	res = postPlan(t, url, gpuAppJSON("big", 30, 80))
	if len(res.Results) != 1 || res.Results[0].Fits() || !strings.Contains(res.Results[0].Message, "no card has 20 GiB of memory") {
		t.Fatalf("plan of a share no card holds: %+v", res.Results)
	}

	r = call(t, http.MethodPost, url+"/v1/apply", gpuAppJSON("big", 30, 80))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	want := "spec.template.spec.containers[0].resources.extendedResources[1].value"
	if !strings.Contains(string(r.body), want) || !strings.Contains(string(r.body), "the largest card of the cluster that takes shares has 16384 MiB") {
		t.Fatalf("apply answered %s, want the field %s named", r.body, want)
	}
	if _, err := testStore.Get(context.Background(), v4.KindApplication, "gpu", "big"); err == nil {
		t.Fatal("the refused application was stored")
	}
	r = call(t, http.MethodPost, url+"/v1/apply", gpuAppJSON("small", 30, 16))
	wantStatus(t, r, http.StatusOK)
}
