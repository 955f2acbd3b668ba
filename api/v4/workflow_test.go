package v4

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func workflowDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/workflow_dag.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWorkflowParse(t *testing.T) {
	docs, err := Parse([]byte(workflowDoc(t)))
	if err != nil {
		t.Fatalf("valid workflow refused: %v", err)
	}
	wf := docs[0].Object.(*Workflow)
	tasks := wf.Spec.Templates[0].DAG.Tasks
	if got := tasks[2].WithItems; len(got) != 4 || got[1].Value != "1" || got[2].Value != "true" || got[3].Fields["k"] != "v" {
		t.Errorf("withItems = %+v", got)
	}
	if r := wf.Spec.Templates[2].RetryStrategy; r.RetryPolicy != RetryOnError {
		t.Errorf("retryPolicy = %q, want the canonical OnError", r.RetryPolicy)
	}
	if c := wf.Spec.Templates[2].Container; c.ImagePullPolicy != PullIfNotPresent {
		t.Errorf("container defaults not applied: %+v", c)
	}
	b, err := json.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b)
	if err != nil || !SameContent(again[0].Object, wf) {
		t.Errorf("a marshalled workflow does not parse back the same: %v", err)
	}
	if k, err := ParseKind("wftmpl"); err != nil || k != KindWorkflowTemplate {
		t.Errorf("ParseKind(wftmpl) = %v, %v", k, err)
	}
	if k, err := ParseKind("wf"); err != nil || k != KindWorkflow {
		t.Errorf("ParseKind(wf) = %v, %v", k, err)
	}
}

// TestWorkflowRefused changes the valid document one way at a time; each is refused
// with the field named.
func TestWorkflowRefused(t *testing.T) {
	doc := workflowDoc(t)
	for _, tc := range []struct {
		name, old, new, field, msg string
	}{
		{"cycle", `{"name":"prepare","template":"prep"}`, `{"name":"prepare","template":"prep","dependencies":["evaluate"]}`,
			"spec.templates[0].dag.tasks[0]", "dependency cycle: prepare → evaluate → train → prepare"},
		{"unknown dependency", `"dependencies":["prepare"]`, `"dependencies":["prepar"]`, "spec.templates[0].dag.tasks[1].dependencies", `unknown task "prepar"`},
		{"unknown depends task", `"depends":"evaluate.AnySucceeded"`, `"depends":"evaluat.AnySucceeded"`, "spec.templates[0].dag.tasks[3].depends", `unknown task "evaluat"`},
		{"depends does not parse", `"depends":"evaluate.AnySucceeded"`, `"depends":"evaluate &&"`, "spec.templates[0].dag.tasks[3].depends", "does not parse: at offset 11"},
		{"unknown result", `"depends":"evaluate.AnySucceeded"`, `"depends":"evaluate.Done"`, "spec.templates[0].dag.tasks[3].depends", `unknown result "Done"`},
		{"when does not parse", `"when":"{{tasks.train.outputs.result}} != bad"`, `"when":"{{tasks.train.outputs.result}} = bad"`, "spec.templates[0].dag.tasks[3].when", "does not parse"},
		{"unknown template", `"template":"eval"`, `"template":"evl"`, "spec.templates[0].dag.tasks[2].template", `unknown template "evl"`},
		{"unknown entrypoint", `"entrypoint":"main"`, `"entrypoint":"mian"`, "spec.entrypoint", "unknown template"},
		{"missing output", `tasks.prepare.outputs.parameters.path`, `tasks.prepare.outputs.parameters.x`, "spec.templates[0].dag.tasks[1].arguments.parameters[0].value",
			`runs template "prep", which has no output parameter "x"`},
		{"not a dependency", `"depends":"train && (prepare.Succeeded || prepare.Skipped)"`, `"dependencies":["prepare"]`,
			"spec.templates[0].dag.tasks[2].arguments.parameters[0].value", `task "train" is not a dependency`},
		{"unknown input", `{{inputs.parameters.model}}`, `{{inputs.parameters.modle}}`, "spec.templates[3].script", `no input parameter "modle"`},
		{"missing argument", `{"name":"data","value":"{{tasks.prepare.outputs.parameters.path}}"},`, ``, "spec.templates[0].dag.tasks[1].arguments.parameters", `missing input parameter "data"`},
		{"unknown workflow parameter", `{{workflow.parameters.epochs}}`, `{{workflow.parameters.epoch}}`, "spec.templates[0].dag.tasks[1].arguments.parameters[1].value", `no parameter "epoch"`},
		{"item outside a loop", `"value":"{{workflow.parameters.epochs}}"`, `"value":"{{item}}"`, "spec.templates[0].dag.tasks[1].arguments.parameters[1].value", "only defined in a loop"},
		{"sequence too long", `"count":"4"`, `"count":"10001"`, "spec.templates[0].dag.tasks[3].withSequence", "more than 10000"},
		{"bad sequence format", `"format":"s%02d"`, `"format":"%s%n"`, "spec.templates[0].dag.tasks[3].withSequence.format", "integer verb"},
		{"two loops", `"withItems":["a",1,true,{"k":"v"}]`, `"withItems":["a"],"withParam":"[1]"`, "spec.templates[0].dag.tasks[2]", "at most one of"},
		{"output path escapes", `"path":"/out/path"`, `"path":"/out/../../etc/shadow"`, "spec.templates[1].outputs.parameters[0].valueFrom.path", "'..'"},
		{"relative output path", `"path":"/out/path"`, `"path":"out"`, "spec.templates[1].outputs.parameters[0].valueFrom.path", "absolute"},
		{"no output source", `"valueFrom":{"path":"/out/path"}`, `"valueFrom":{}`, "spec.templates[1].outputs.parameters[0].valueFrom", "exactly one"},
		{"no template type", `"suspend":{"duration":"5s"}`, `"suspend":null`, "spec.templates[5]", "exactly one of"},
		{"bad retry policy", `"retryPolicy":"onerror"`, `"retryPolicy":"Sometimes"`, "spec.templates[2].retryStrategy.retryPolicy", "must be one of"},
		{"bad backoff", `"duration":"1s"`, `"duration":"soon"`, "spec.templates[2].retryStrategy.backoff.duration", "duration"},
		{"bad suspend", `"duration":"5s"`, `"duration":"-5s"`, "spec.templates[5].suspend.duration", "duration"},
		{"bad task name", `"name":"shard"`, `"name":"sh.ard"`, "spec.templates[0].dag.tasks[3].name", "letters, digits"},
		{"duplicate task", `"name":"shard"`, `"name":"train"`, "spec.templates[0].dag.tasks[3].name", `duplicate task "train"`},
		{"recursion", `"template":"wait"`, `"template":"notify"`, "spec.templates[4]", "notify → notify"},
		{"result of a dag", `"template":"train","dependencies"`, `"template":"notify","dependencies"`, "spec.templates[0].dag.tasks[2].arguments.parameters[0].value", "no standard output"},
		{"argument without a value", `{"name":"epochs","value":"{{workflow.parameters.epochs}}"}`, `{"name":"epochs"}`,
			"spec.templates[0].dag.tasks[1].arguments.parameters[1].value", "required"},
		{"template expression", `{{inputs.parameters.model}}`, `{{=inputs.parameters.model}}`, "spec.templates[3].script", "not supported"},
		{"bad template constraint", `"retryStrategy":{`, `"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"LIKE","type":3}]}]},"retryStrategy":{`,
			"spec.templates[2].constraint.intersectionItem[0].unionData[0].text", "required"},
		{"bad workflow constraint", `"entrypoint":"main"`, `"entrypoint":"main","constraint":{"intersectionItem":[{"unionData":[]}]}`,
			"spec.constraint.intersectionItem[0].unionData", "required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(doc, tc.old) {
				t.Fatalf("the document has no %s", tc.old)
			}
			_, err := Parse([]byte(strings.Replace(doc, tc.old, tc.new, 1)))
			errs, _ := err.(FieldErrors)
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Message, tc.msg) {
					return
				}
			}
			t.Errorf("want %s: …%s…, got %v", tc.field, tc.msg, err)
		})
	}
}

// spec.shutdown takes Stop or Terminate, nothing else.
func TestWorkflowShutdownValidated(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"", true}, {"Stop", true}, {"Terminate", true}, {"stop", false}, {"Kill", false}} {
		_, err := Parse([]byte(`{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"m","shutdown":"` + tc.v +
			`","templates":[{"name":"m","suspend":{}}]}}`))
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "spec.shutdown") {
			t.Errorf("shutdown %q: %v", tc.v, err)
		}
	}
}
