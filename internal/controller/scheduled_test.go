package controller

import (
	"testing"

	"github.com/berthhq/berth/internal/scheduler"
)

func TestScheduledMessage(t *testing.T) {
	on := func(node string, idx ...int) []scheduler.Placement {
		var out []scheduler.Placement
		for _, i := range idx {
			out = append(out, scheduler.Placement{Index: i, Node: node, Name: "tg"})
		}
		return out
	}
	seq := func(from, to int) []int {
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	cat := func(ps ...[]scheduler.Placement) []scheduler.Placement {
		var out []scheduler.Placement
		for _, p := range ps {
			out = append(out, p...)
		}
		return out
	}
	spread := func(nodes []string, n int) []scheduler.Placement {
		var out []scheduler.Placement
		for i := range n {
			out = append(out, scheduler.Placement{Index: i, Node: nodes[i%len(nodes)]})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		placed []scheduler.Placement
		want   string
	}{
		{"one", on("vm", 0), "placed instance 0 on vm"},
		{"two on one node", on("vm", 0, 1), "placed instances 0 and 1 on vm"},
		{"grouped by node, in index order", cat(on("b", 1, 3), on("a", 0, 2, 4)), "placed instances 0, 2 and 4 on a; 1 and 3 on b"},
		{"a run is a range", on("vm", seq(0, 99)...), "placed instances 0-99 on vm"},
		{"a run of two is not", on("vm", 3, 4, 7), "placed instances 3, 4 and 7 on vm"},
		{"ranges and singles", on("vm", 0, 1, 2, 5, 7, 8, 9, 10), "placed instances 0-2, 5 and 7-10 on vm"},
		{"a long list is cut", on("a", 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20), "placed instances 0, 2, 4, 6, 8, 10, 12, 14 and 3 more on a"},
		{"many nodes are counted", spread([]string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"}, 14),
			"placed instances 0 and 7 on n1; 1 and 8 on n2; 2 and 9 on n3; 3 and 10 on n4; 4 and 11 on n5; and 4 more on 2 other nodes"},
		{"unsorted input", on("vm", 2, 0, 1), "placed instances 0-2 on vm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scheduledMessage(tc.placed); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
