package sim

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestSimStepResult(t *testing.T) {
	if simStepResult(nil, 0) != nil {
		t.Fatal("a task group that is not a step got a step result")
	}
	def := "d"
	io := &v4.StepIO{Workflow: "wf", NodeID: "n1", Main: "main", Result: true, StdoutParameter: "out",
		Parameters: []v4.StepParameter{{Name: "a", Path: "/a"}, {Name: "b", Path: "/b", Default: &def}},
		Artifacts:  []v4.StepOutputArtifact{{Name: "model", Path: "/m", Key: "ns/wf/u/n1/model"}}}
	for _, code := range []int{0, 3} {
		r := simStepResult(io, code)
		if !r.Collected || r.ExitCode != code || r.Error != "" {
			t.Fatalf("code %d: %+v", code, r)
		}
		got := map[string]string{}
		for _, p := range r.Parameters {
			got[p.Name] = *p.Value
		}
		if want := map[string]string{"a": "sim", "b": "d", "out": "sim"}; len(got) != len(want) ||
			got["a"] != want["a"] || got["b"] != want["b"] || got["out"] != want["out"] {
			t.Fatalf("parameters %v, want %v", got, want)
		}
		if r.Result == nil || *r.Result != "sim" || len(r.Artifacts) != 1 || r.Artifacts[0].Key != io.Artifacts[0].Key {
			t.Fatalf("result/artifacts: %+v", r)
		}
	}
}
