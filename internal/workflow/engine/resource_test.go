package engine

import (
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// pipeline is the shape of examples/pipeline: one of two alternative trainings runs (by
// when), the next step takes the model of whichever ran through two optional artifacts,
// and a resource step writes an object with its output.
const pipeline = `{"kind":"workflow","metadata":{"name":"p"},"spec":{"entrypoint":"main",
 "arguments":{"parameters":[{"name":"gpu","value":"false"}]},"templates":[
 {"name":"main","dag":{"tasks":[
  {"name":"gpu","template":"train","when":"{{workflow.parameters.gpu}} == true"},
  {"name":"cpu","template":"train","when":"{{workflow.parameters.gpu}} != true"},
  {"name":"eval","template":"eval","depends":"gpu.Succeeded || cpu.Succeeded","arguments":{"artifacts":[
   {"name":"g","from":"{{tasks.gpu.outputs.artifacts.model}}","optional":true},
   {"name":"c","from":"{{tasks.cpu.outputs.artifacts.model}}","optional":true}]}},
  {"name":"deploy","template":"deploy","dependencies":["eval"],
   "arguments":{"parameters":[{"name":"m","value":"{{tasks.eval.outputs.parameters.score}}"}]}}]}},
 {"name":"train","container":{"image":"t"},"outputs":{"artifacts":[{"name":"model","path":"/m"}]}},
 {"name":"eval","inputs":{"artifacts":[{"name":"g","path":"/g","optional":true},{"name":"c","path":"/c","optional":true}]},
  "container":{"image":"e"},"outputs":{"parameters":[{"name":"score","valueFrom":{"path":"/s"}}]}},
 {"name":"deploy","inputs":{"parameters":[{"name":"m"}]},
  "resource":{"action":"apply","manifest":"{\"kind\":\"configmap\",\"metadata\":{\"name\":\"model\",\"labels\":{\"score\":\"{{inputs.parameters.m}}\"}},\"datas\":{}}"}}]}}`

func TestResourceStepAndOptionalArtifacts(t *testing.T) {
	s := newSim(t, pipeline)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		switch {
		case st.Template.Name == "train":
			return v4.WfSucceeded, &v4.WfOutputs{Artifacts: []v4.WfArtifact{{Name: "model"}}}
		case st.Template.Name == "eval":
			return v4.WfSucceeded, outParams("score", "90")
		}
		return v4.WfSucceeded, nil
	})
	if p.Phase != v4.WfSucceeded {
		t.Fatalf("phase %s %q", p.Phase, p.Message)
	}
	if got := names(s.started); !slices.Equal(got, []string{"p.cpu", "p.eval", "p.deploy"}) {
		t.Fatalf("started %v", got)
	}
	eval := s.started[1]
	in := s.in.Nodes[eval.NodeID].Inputs
	if in == nil || len(in.Artifacts) != 2 || in.Artifacts[0].From != "" || !strings.HasSuffix(in.Artifacts[1].From, "/model") {
		t.Fatalf("eval's inputs: the skipped step's artifact must be left out, the other's passed: %+v", in)
	}
	deploy := s.started[2]
	if deploy.Template.Resource == nil || !strings.Contains(deploy.Template.Resource.Manifest, `"score":"90"`) {
		t.Errorf("the resource step's manifest is not substituted: %+v", deploy.Template.Resource)
	}
	if deploy.Admitted == nil || !strings.Contains(deploy.Admitted.Resource.Manifest, "{{inputs.parameters.m}}") {
		t.Errorf("the admitted template is not handed on: %+v", deploy.Admitted)
	}
	if n := s.in.Nodes[deploy.NodeID]; n.Type != v4.WfNodePod {
		t.Errorf("a resource step is a %s node, want Pod", n.Type)
	}
}
