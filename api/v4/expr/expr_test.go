package expr

import (
	"errors"
	"strings"
	"testing"
)

func TestWhen(t *testing.T) {
	params := map[string]string{"inputs.parameters.x": "5", "steps.flip.outputs.result": "heads", "big": "10"}
	lookup := func(k string) (string, bool) { v, ok := params[k]; return v, ok }
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"{{inputs.parameters.x}} == 5", true},
		{"{{inputs.parameters.x}} == 5.0", true},
		{"{{inputs.parameters.x}} != 5", false},
		{"{{ inputs.parameters.x }} < {{big}}", true}, // numbers, not strings ("5" > "10")
		{"{{steps.flip.outputs.result}} == heads", true},
		{"{{steps.flip.outputs.result}} == 'tails'", false},
		{`"{{steps.flip.outputs.result}}" == "heads" && !({{big}} <= 3)`, true},
		{"true", true},
		{"false || {{big}} >= 10", true},
		{"a < b", true}, // strings
		{"!!true", true},
		{"-1 < 0", true},
	} {
		got, err := EvalWhen(tc.in, lookup)
		if err != nil || got != tc.want {
			t.Errorf("EvalWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in  string
		pos int
		msg string
	}{
		{"", 0, "empty"},
		{"a &&", 4, "end of the expression"},
		{"(a || b", 7, "expected ')'"},
		{"a = b", 2, "'=='"},
		{"a == b c", 7, "unexpected"},
		{"'open", 0, "unterminated"},
		{"a $ b", 2, "unexpected character"},
		{"a == == b", 5, "unexpected"},
		{strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100), 65, "nested deeper"},
		{strings.Repeat("!", 100) + "a", 65, "nested deeper"},
		{strings.Repeat("a", MaxLen+1), 0, "longer than"},
	} {
		_, err := Parse(tc.in)
		var e *Error
		if !errors.As(err, &e) || e.Pos != tc.pos || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("Parse(%.40q) = %v; want an error at %d with %q", tc.in, err, tc.pos, tc.msg)
		}
	}
}

func TestEvalNotACondition(t *testing.T) {
	if _, err := EvalWhen("{{x}}", func(string) (string, bool) { return "maybe", true }); err == nil {
		t.Error(`"maybe" evaluated as a condition`)
	}
	if _, err := EvalWhen("{{y}} == 1", func(string) (string, bool) { return "", false }); err == nil {
		t.Error("an unresolved placeholder was evaluated")
	}
}

func TestDepends(t *testing.T) {
	states := map[string]TaskState{
		"A":    {Phase: Succeeded},
		"B":    {Phase: Failed},
		"C":    {Phase: Skipped},
		"D":    {Phase: Errored},
		"loop": {Phase: Failed, Items: 3, ItemsSuccess: 1, ItemsFailed: 2},
		"bad":  {Phase: Failed, Items: 2, ItemsFailed: 2},
		"e-f":  {Phase: Omitted},
	}
	state := func(task string) (TaskState, bool) { s, ok := states[task]; return s, ok }
	for _, tc := range []struct {
		in    string
		want  bool
		tasks string
	}{
		{"A", true, "A"},
		{"A && (B.Failed || C.Succeeded)", true, "A,B,C"},
		{"A && B", false, "A,B"},
		{"C", true, "C"}, // a bare task: Succeeded, Skipped or Daemoned
		{"D.Errored && !D.Failed", true, "D"},
		{"loop.AnySucceeded && bad.AllFailed", true, "loop,bad"},
		{"loop.AllFailed", false, "loop"},
		{"e-f.Omitted || A.Failed", true, "e-f,A"},
	} {
		d, err := ParseDepends(tc.in)
		if err != nil {
			t.Errorf("ParseDepends(%q): %v", tc.in, err)
			continue
		}
		if got := strings.Join(d.Tasks(), ","); got != tc.tasks {
			t.Errorf("%q: tasks %s, want %s", tc.in, got, tc.tasks)
		}
		if got, err := d.Eval(state); err != nil || got != tc.want {
			t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestDependsErrors(t *testing.T) {
	for _, in := range []string{"A.Done", "A == B", "'A'", ".Succeeded", "A &&", "true"} {
		if _, err := ParseDepends(in); err == nil {
			t.Errorf("ParseDepends(%q) accepted", in)
		}
	}
}

func TestSubstitute(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == "big" {
			return strings.Repeat("x", 1000), true
		}
		return "<" + k + ">", k != "missing"
	}
	for _, tc := range []struct {
		in, want, err string
		max           int
	}{
		{"a {{b}} c {{ d.e }}", "a <b> c <d.e>", "", 100},
		{"no placeholders", "no placeholders", "", 100},
		{"{{missing}}", "", "unresolved", 100},
		{"{{open", "", "not closed", 100},
		{"{{}}", "", "empty", 100},
		{"{{=sprig.add(1)}}", "", "not supported", 100},
		{strings.Repeat("{{big}}", 100), "", "passes", 10000},
		{"}} {{a}}", "}} <a>", "", 100},
	} {
		got, err := Substitute(tc.in, tc.max, lookup)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Substitute(%.30q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Substitute(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
