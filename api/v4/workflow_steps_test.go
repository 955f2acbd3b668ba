package v4

import (
	"fmt"
	"strings"
	"testing"
)

const stepsDoc = `{"kind":"workflow","metadata":{"name":"coin"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","steps":[[{"name":"flip","template":"flip"}],
  [{"name":"heads","template":"say","when":"{{steps.flip.outputs.result}} == heads","arguments":{"parameters":[{"name":"msg","value":"{{steps.flip.outputs.result}}"}]}},
   {"name":"tails","template":"say","when":"{{steps.flip.outputs.result}} == tails","arguments":{"parameters":[{"name":"msg","value":"{{item}}"}]},"withParam":"{{steps.flip.outputs.parameters.list}}"}]],
  "outputs":{"parameters":[{"name":"side","valueFrom":{"parameter":"{{steps.flip.outputs.result}}"}}]}},
 {"name":"flip","outputs":{"parameters":[{"name":"list","valueFrom":{"stdout":true}}]},"script":{"command":["sh"],"source":"echo heads"}},
 {"name":"say","inputs":{"parameters":[{"name":"msg"}]},"process":{"procName":"echo","startCmd":"echo {{inputs.parameters.msg}}"}}]}}`

func TestWorkflowSteps(t *testing.T) {
	if _, err := Parse([]byte(stepsDoc)); err != nil {
		t.Fatalf("valid steps workflow refused: %v", err)
	}
	// A step of the same group has no outputs yet.
	bad := strings.Replace(stepsDoc, `"value":"{{item}}"`, `"value":"{{steps.heads.outputs.result}}"`, 1)
	_, err := Parse([]byte(bad))
	if err == nil || !strings.Contains(err.Error(), `spec.templates[0].steps[1][1].arguments.parameters[0].value: {{steps.heads.outputs.result}}: step "heads" has not run yet`) {
		t.Errorf("a reference to a step of the same group: %v", err)
	}
	bad = strings.Replace(stepsDoc, `{{steps.flip.outputs.parameters.list}}`, `{{tasks.flip.outputs.parameters.list}}`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "only named inside a dag template") {
		t.Errorf("tasks named in a steps template: %v", err)
	}
}

// TestWorkflowNesting: 31 steps templates each calling the next nest too deep; 30 do not.
func TestWorkflowNesting(t *testing.T) {
	doc := func(levels int) string {
		var b strings.Builder
		b.WriteString(`{"kind":"workflow","metadata":{"name":"deep"},"spec":{"entrypoint":"t0","templates":[`)
		for i := range levels {
			fmt.Fprintf(&b, `{"name":"t%d","steps":[[{"name":"s","template":"t%d"}]]},`, i, i+1)
		}
		fmt.Fprintf(&b, `{"name":"t%d","suspend":{}}]}}`, levels)
		return b.String()
	}
	if _, err := Parse([]byte(doc(MaxWfNesting))); err != nil {
		t.Errorf("%d levels refused: %v", MaxWfNesting, err)
	}
	_, err := Parse([]byte(doc(MaxWfNesting + 1)))
	if err == nil || !strings.Contains(err.Error(), "spec.templates[0]: calls nest 31 steps or dag templates deep, more than 30") {
		t.Errorf("%d levels: %v", MaxWfNesting+1, err)
	}
}

// TestWorkflowBounds: counts and sizes past their bounds are refused, not expanded.
func TestWorkflowBounds(t *testing.T) {
	items := strings.Repeat(`1,`, MaxWfLoopItems) + `1`
	tasks := strings.Repeat(`{"name":"x","template":"w"},`, MaxWfStepsPerTmpl) + `{"name":"y","template":"w"}`
	for _, tc := range []struct{ name, doc, want string }{
		{"items", `{"kind":"workflow","metadata":{"name":"a"},"spec":{"entrypoint":"m","templates":[{"name":"m","steps":[[{"name":"s","template":"w","withItems":[` + items +
			`]}]]},{"name":"w","suspend":{}}]}}`, "withItems: must have at most 10000 items"},
		{"tasks", `{"kind":"workflow","metadata":{"name":"a"},"spec":{"entrypoint":"m","templates":[{"name":"m","dag":{"tasks":[` + tasks +
			`]}},{"name":"w","suspend":{}}]}}`, "must have at most 1000 tasks"},
		{"source", `{"kind":"workflow","metadata":{"name":"a"},"spec":{"entrypoint":"m","templates":[{"name":"m","script":{"command":["sh"],"source":"` +
			strings.Repeat("x", maxWfScriptSource+1) + `"}}]}}`, "source: must be at most"},
		{"retries", `{"kind":"workflow","metadata":{"name":"a"},"spec":{"entrypoint":"m","templates":[{"name":"m","suspend":{},"retryStrategy":{"limit":1001}}]}}`,
			"retryStrategy.limit: must be 0 to 1000"},
	} {
		_, err := Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %.300v; want %q", tc.name, err, tc.want)
		}
	}
}

// denseDAG is a hostile dag: n tasks, each depending on every task before it (half a
// million edges fit in a 2 MiB request at n=900), each naming an output of the last
// task before it.
func denseDAG(n int) string {
	var b strings.Builder
	b.WriteString(`{"kind":"workflow","metadata":{"name":"a"},"spec":{"entrypoint":"m","templates":[{"name":"m","dag":{"tasks":[`)
	for i := range n {
		var deps []string
		for j := range i {
			deps = append(deps, fmt.Sprintf(`"t%d"`, j))
		}
		ref := "x"
		if i > 0 {
			ref = fmt.Sprintf("{{tasks.t%d.status}}", i-1)
		}
		fmt.Fprintf(&b, `{"name":"t%d","template":"w","dependencies":[%s],"arguments":{"parameters":[{"name":"p","value":%q}]}},`, i, strings.Join(deps, ","), ref)
	}
	b.WriteString(`{"name":"last","template":"w","dependencies":["t0"],"arguments":{"parameters":[{"name":"p","value":"{{tasks.t1.status}}"}]}}]}},` +
		`{"name":"w","inputs":{"parameters":[{"name":"p"}]},"suspend":{}}]}}`)
	return b.String()
}

// TestWorkflowDenseDAG: what a task sees is every task it depends on, directly or not,
// and nothing else, in a dense graph (computed as bit sets in dependency order; a
// benchmark keeps it fast).
func TestWorkflowDenseDAG(t *testing.T) {
	_, err := Parse([]byte(denseDAG(300)))
	errs, _ := err.(FieldErrors)
	if len(errs) != 1 || errs[0].Field != "spec.templates[0].dag.tasks[300].arguments.parameters[0].value" ||
		!strings.Contains(errs[0].Message, `task "t1" is not a dependency`) {
		t.Errorf("want only last's reference to t1 refused, got %v", err)
	}
}

func BenchmarkValidateDenseDAG(b *testing.B) {
	doc := []byte(denseDAG(600))
	for range b.N {
		_, _ = Parse(doc)
	}
}
