package cli

import (
	"encoding/json"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// FuzzWorkflowTree: whatever node statuses a server answers (links to missing nodes,
// cycles, self links, odd names), the tree is drawn, each node once, with no control
// character reaching the terminal.
func FuzzWorkflowTree(f *testing.F) {
	seed, _ := json.Marshal(treeNodes(3))
	f.Add(seed)
	f.Add([]byte(`[{"id":"a","children":["b","a"]},{"id":"b","children":["a"],"boundaryID":"b"}]`))
	f.Add([]byte(`[{"id":"a","name":"x\u001b[2J","displayName":"\r\n","phase":"Failed","message":"\u0007"},{"id":"a"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var nodes []v4.WfNodeStatus
		if json.Unmarshal(data, &nodes) != nil || len(nodes) > 200 {
			return
		}
		tree := newWfTree(nodes)
		rows := tree.rows(testNow, false)
		if len(rows) > 2*len(tree.nodes)+1 {
			t.Fatalf("%d rows for %d nodes", len(rows), len(tree.nodes))
		}
		if n := len(tree.order()); n != len(tree.nodes) {
			t.Fatalf("%d of %d nodes drawn", n, len(tree.nodes))
		}
		for _, l := range renderTree(rows, 0) {
			if strings.ContainsAny(l, "\x1b\r\n\a") {
				t.Fatalf("a control character in %q", l)
			}
		}
	})
}
