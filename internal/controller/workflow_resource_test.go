package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/workflow/engine"
)

type fakeResourceSteps struct{ got []ResourceStep }

func (f *fakeResourceSteps) DoResourceStep(_ context.Context, s ResourceStep) (ResourceResult, error) {
	f.got = append(f.got, s)
	return ResourceResult{Name: s.Object.GetMeta().Name, ResourceVersion: "7"}, nil
}

// A resource step's manifest is parsed again after substitution: a parameter that turns
// it into another object (another namespace, kind or name) fails the step before the
// server is asked; the object handed on is in the workflow's namespace, with its
// submitter.
func TestResourceStepSubstitution(t *testing.T) {
	const manifest = "kind: configmap\nmetadata:\n  name: model\n  labels: {key: \"{{inputs.parameters.key}}\"}\ndatas: {}\n"
	admitted := v4.WfTemplate{Name: "roll", Resource: &v4.WfResource{Action: v4.WfResourceApply, Manifest: manifest}}
	for _, c := range []struct{ name, value, want string }{
		{"a plain value", "k1", ""},
		{"another namespace", "k1\"}\n  namespace: other\n  x: {y: \"", "names configmap other/model, not configmap ml/model as admitted"},
		{"another kind", "k1\"}\nkind: workflow\nx: {y: \"", "resource manifest after substitution"},
		{"another name", "k1\"}\n  name: admin\n  x: {y: \"", "duplicate key \"name\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeResourceSteps{}
			wf := &v4.Workflow{Metadata: v4.ObjectMeta{Name: "wf", Namespace: "ml",
				Annotations: map[string]string{v4.WfSubmitterAnnotation: "tok1"}}}
			p := &wfPass{c: &WorkflowController{opts: Options{ResourceSteps: f}}, wf: wf}
			resolved := admitted
			resolved.Resource = &v4.WfResource{Action: v4.WfResourceApply, Manifest: strings.Replace(manifest, "{{inputs.parameters.key}}", c.value, 1)}
			res, err := p.resource(context.Background(), engine.Start{Template: resolved, Admitted: &admitted})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || len(f.got) > 0 {
					t.Fatalf("%v (server asked %d times), want an error saying %q", err, len(f.got), c.want)
				}
				return
			}
			if err != nil || res.Name != "model" || len(f.got) != 1 {
				t.Fatalf("%+v, %v", res, err)
			}
			if s := f.got[0]; s.Submitter != "tok1" || s.Object.GetMeta().Namespace != "ml" || s.Workflow != "ml/wf" {
				t.Errorf("the step handed on: %+v", s)
			}
		})
	}
}

// A cronworkflow's runs carry its own writer as their submitter (recorded by the
// server), never one its workflowMetadata claims.
func TestCronRunSubmitter(t *testing.T) {
	for _, c := range []struct{ own, want string }{{"tokA", "tokA"}, {"", ""}} {
		cw := &v4.CronWorkflow{Metadata: v4.ObjectMeta{Name: "cw", Namespace: "ml", Annotations: map[string]string{}}}
		if c.own != "" {
			cw.Metadata.Annotations[v4.WfSubmitterAnnotation] = c.own
		}
		cw.Spec.WorkflowMetadata = &v4.TemplateMeta{Annotations: map[string]string{v4.WfSubmitterAnnotation: "admin"}}
		cw.Spec.WorkflowSpec = v4.WorkflowSpec{Entrypoint: "s", Templates: []v4.WfTemplate{{Name: "s", Suspend: &v4.WfSuspend{}}}}
		run, err := NewCronRun(cw, "cw-1", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := run.GetMeta().Annotations[v4.WfSubmitterAnnotation]; got != c.want || (c.want == "") == ok {
			t.Errorf("own %q: the run's submitter is %q (set %v), want %q", c.own, got, ok, c.want)
		}
	}
}
