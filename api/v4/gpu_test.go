package v4

import (
	"fmt"
	"strings"
	"testing"
)

// GPU requests as gpu-manager's users write them, and the mistakes they make.
func TestGPURequests(t *testing.T) {
	doc := `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x",
		"resources":{"limits":{"cpu":"1","memory":"64"},"extendedResources":[%s]}}]}}}}`
	const at = "spec.template.spec.containers[0].resources.extendedResources"
	for _, tc := range []struct {
		name, ext string
		want      GPURequest
		err       string
	}{
		{"whole cards", `{"name":"nvidia.com/gpu","value":2}`, GPURequest{Cards: 2}, ""},
		{"a share", `{"name":"tencent.com/vcuda-core","value":30},{"name":"tencent.com/vcuda-memory","value":16}`, GPURequest{Cores: 30, MemoryMiB: 4096}, ""},
		{"whole cards in hundredths", `{"name":"tencent.com/vcuda-core","value":200}`, GPURequest{Cards: 2}, ""},
		{"one card, its memory named", `{"name":"tencent.com/vcuda-core","value":100},{"name":"tencent.com/vcuda-memory","value":4}`, GPURequest{Cards: 1}, ""},
		{"another extended resource", `{"name":"bkbcs/cpuset","value":2}`, GPURequest{}, ""},
		{"150 cores", `{"name":"tencent.com/vcuda-core","value":150},{"name":"tencent.com/vcuda-memory","value":4}`, GPURequest{},
			at + "[0].value: above 100, tencent.com/vcuda-core asks for whole cards and must be a multiple of 100"},
		{"memory without cores", `{"name":"tencent.com/vcuda-memory","value":4}`, GPURequest{},
			at + "[0].value: a share of a card's memory needs tencent.com/vcuda-core too"},
		{"a share without memory", `{"name":"tencent.com/vcuda-core","value":50}`, GPURequest{},
			at + "[0].value: a share of a card (50 of 100) needs tencent.com/vcuda-memory too"},
		{"cards two ways", `{"name":"nvidia.com/gpu","value":1},{"name":"tencent.com/vcuda-core","value":50},{"name":"tencent.com/vcuda-memory","value":4}`, GPURequest{},
			at + "[0].name: nvidia.com/gpu and tencent.com/vcuda-core/tencent.com/vcuda-memory ask for cards two ways"},
		{"half a card by count", `{"name":"nvidia.com/gpu","value":0.5}`, GPURequest{}, at + "[0].value: nvidia.com/gpu must be a whole number"},
		{"listed twice", `{"name":"nvidia.com/gpu","value":1},{"name":"nvidia.com/gpu","value":1}`, GPURequest{}, at + "[1].name: nvidia.com/gpu is listed twice"},
		{"too many cards", `{"name":"nvidia.com/gpu","value":65}`, GPURequest{}, at + "[0].value: at most 64 cards per task"},
		{"a huge value", `{"name":"tencent.com/vcuda-memory","value":1e300},{"name":"tencent.com/vcuda-core","value":10}`, GPURequest{}, at + "[0].value: tencent.com/vcuda-memory must be a whole number of at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(fmt.Sprintf(doc, tc.ext)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := PodSpecOf(docs[0].Object).Containers[0]
			if got := GPURequestOf(c.Resources); got != tc.want {
				t.Errorf("request %+v, want %+v", got, tc.want)
			}
		})
	}
}
