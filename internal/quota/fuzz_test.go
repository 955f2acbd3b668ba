package quota

import (
	"encoding/json"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// FuzzQuotaBody decodes what an administrator PUTs (a quota and limit defaults), and,
// when it validates, applies it to a spec and counts: nothing panics, a validated quota
// holds only known resources, and defaults never give a task more than the maximum.
func FuzzQuotaBody(f *testing.F) {
	for _, seed := range []string{
		`{"resources":{"cpu":8,"memory":16384,"gpu":0,"instances":10}}`,
		`{"limitDefaults":{"defaultRequests":{"cpu":0.25,"memory":64},"defaultLimits":{"memory":128},"max":{"cpu":2,"gpu":1}}}`,
		`{"resources":{"cpus":1e308,"gpu":-1},"limitDefaults":{"max":{"cpu":-2}}}`,
		`{"resources":{"vcuda-core":1e12,"vcuda-memory":0.5}}`,
	} {
		f.Add(seed, `{"image":"x","resources":{"requests":{"cpu":"1.5"},"extendedResources":[{"name":"nvidia.com/gpu","value":2}]}}`)
	}
	f.Fuzz(func(t *testing.T, body, task string) {
		var in struct {
			Resources     List      `json:"resources"`
			LimitDefaults *Defaults `json:"limitDefaults"`
		}
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		if len(in.Resources.Validate("resources", Names)) > 0 || len(in.LimitDefaults.Validate("limitDefaults")) > 0 {
			return
		}
		var c v4.Container
		if json.Unmarshal([]byte(task), &c) != nil {
			return
		}
		a := &v4.Application{}
		a.Metadata.Name, a.Metadata.Namespace = "a", "ns"
		a.Spec.Instance = 2
		a.Spec.Template.Spec.Containers = []v4.Container{c}
		err := Apply("ns", a, in.LimitDefaults)
		u := Usage([]v4.Object{a})
		_ = Check("ns", in.Resources, nil, u)
		if err == nil && in.LimitDefaults != nil {
			per := PerInstance(&a.Spec.Template.Spec)
			for k, m := range in.LimitDefaults.Max {
				if per[k] > m+1e-9 {
					t.Fatalf("%s %v above the maximum %v after Apply", k, per[k], m)
				}
			}
		}
	})
}
