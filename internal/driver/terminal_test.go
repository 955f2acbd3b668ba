package driver

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestFollowResize(t *testing.T) {
	FollowResize(nil, nil, func(v4.TermSize) { t.Error("a nil resize delivered a size") })

	resize := make(chan v4.TermSize, 2)
	resize <- v4.TermSize{Rows: 1, Cols: 2}
	resize <- v4.TermSize{Rows: 3, Cols: 4}
	close(resize)
	var got []v4.TermSize
	FollowResize(resize, nil, func(sz v4.TermSize) { got = append(got, sz) })
	if len(got) != 2 || got[1] != (v4.TermSize{Rows: 3, Cols: 4}) {
		t.Errorf("sizes %v", got)
	}

	done := make(chan struct{})
	close(done)
	FollowResize(make(chan v4.TermSize), done, func(v4.TermSize) { t.Error("a size after done") })
}
