package engine

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Values known only at run time are bounded there: a large parameter repeated in a
// template, a withParam list past the loop bound, a when that does not parse once
// substituted, a value that tries to add JSON fields. Each fails its step with a
// reason; none builds an unbounded string or runs anything.
func TestRunTimeBounds(t *testing.T) {
	big := strings.Repeat("x", 60<<10)
	many := "[" + strings.Repeat("1,", v4.MaxWfLoopItems) + "1]"
	for _, tc := range []struct{ name, arg, use, want string }{
		{"substitution past 1 MiB", big, `"container":{"image":"x","args":[` + strings.Repeat(`"{{inputs.parameters.v}}",`, 20) + `"end"]}`, "passes"},
		{"withParam past the bound", many, `"steps":[[{"name":"l","template":"leaf","withParam":"{{inputs.parameters.v}}"}]]`, "more than 10000"},
		{"withParam not a list", "{}", `"steps":[[{"name":"l","template":"leaf","withParam":"{{inputs.parameters.v}}"}]]`, "not a JSON list"},
		{"when not parsing", "a b", `"steps":[[{"name":"l","template":"leaf","when":"{{inputs.parameters.v}} == a"}]]`, "when:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"kind":"workflow","metadata":{"name":"h"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","steps":[[{"name":"s","template":"t","arguments":{"parameters":[{"name":"v","value":"{{workflow.parameters.v}}"}]}}]]},
 {"name":"t","inputs":{"parameters":[{"name":"v"}]},` + tc.use + `},
 {"name":"leaf","container":{"image":"x"}}],"arguments":{"parameters":[{"name":"v","value":"` + tc.arg + `"}]}}}`
			s := newSim(t, doc)
			p := s.runToEnd(succeed)
			if len(s.started) != 0 || p.Phase != v4.WfFailed || !strings.Contains(p.Message, tc.want) {
				t.Errorf("started %d, phase %s, message %.200q; want Failed with %q", len(s.started), p.Phase, p.Message, tc.want)
			}
		})
	}
}

func TestValuesCannotAddFields(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"j"},"spec":{"entrypoint":"t","arguments":{"parameters":[{"name":"v","value":"x\",\"privileged\":true,\"image\":\"evil"}]},"templates":[
 {"name":"t","container":{"image":"ok","args":["{{workflow.parameters.v}}"]}}]}}`
	s := newSim(t, doc)
	p := s.pass()
	c := p.Start[0].Template.Container
	if c.Privileged || c.Image != "ok" || c.Args[0] != `x","privileged":true,"image":"evil` {
		t.Errorf("a parameter changed the container: %+v", c)
	}
}
