package v4

import (
	"os"
	"regexp"
	"testing"
)

// The workflow of docs/workflows.md is one berth accepts.
func TestWorkflowDocExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(apiVersion: v4\nkind: workflow\n.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/workflows.md has no workflow example")
	}
	if _, err := Parse(m[1]); err != nil {
		t.Errorf("the example of docs/workflows.md is refused: %v", err)
	}
}
