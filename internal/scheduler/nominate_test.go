package scheduler

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Holds lists the indexes of one owner that hold room, and no other owner's; a cleared
// hold is gone from it.
func TestHolds(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("a")})
	req := gpuRequest(1, v4.GPURequest{})
	req.App = highApp
	other := *req
	other.App = lowApp
	s.NominateCards(req, 0, "a", nil, Options{})
	s.NominateCards(req, 3, "a", nil, Options{})
	s.NominateCards(&other, 1, "a", nil, Options{})
	cases := []struct {
		name  string
		clear []int
		want  []int
	}{
		{"both holds", nil, []int{0, 3}},
		{"one cleared", []int{0}, []int{3}},
		{"none left", []int{3}, []int{}},
	}
	for _, tc := range cases {
		for _, i := range tc.clear {
			s.ClearNomination(highApp, i)
		}
		if got := slices.Sorted(slices.Values(s.Holds(highApp))); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("%s: holds %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := s.Holds(lowApp); !slices.Equal(got, []int{1}) {
		t.Errorf("the other owner's holds %v, want [1]", got)
	}
	if got := s.Holds(midApp); len(got) != 0 {
		t.Errorf("an owner without holds: %v", got)
	}
}
