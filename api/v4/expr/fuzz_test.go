package expr

import (
	"strings"
	"testing"
)

// FuzzParse: no input panics or runs unbounded; whatever parses evaluates without panic
// in both modes, and an accepted depends expression names only the tasks it spells.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"A && (B.Failed || C.Succeeded)", "{{inputs.parameters.x}} == 5", "!(a<=b) || 'x\\'y' != \"z\"",
		"-1.5 >= .5", "loop.AnySucceeded", "((((a))))", "a == == b", "1st-step.Omitted", "{{a}} {{b", "{{=x}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if e, err := Parse(s); err == nil {
			_, _ = e.Eval(Words)
			_ = e.Words()
		}
		if d, err := ParseDepends(s); err == nil {
			for _, task := range d.Tasks() {
				if !strings.Contains(s, task) {
					t.Fatalf("%q: task %q is not in the source", s, task)
				}
			}
			_, _ = d.Eval(func(string) (TaskState, bool) { return TaskState{Phase: Failed}, true })
		}
		_, _ = ParseWhen(s)
		out, err := Substitute(s, 256, func(k string) (string, bool) { return k + k, true })
		if err == nil && len(out) > 256 {
			t.Fatalf("Substitute returned %d bytes, more than its bound", len(out))
		}
	})
}
