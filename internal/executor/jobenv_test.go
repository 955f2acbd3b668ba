package executor

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A job's run is told the job's name, and its index when the job is Indexed; task
// groups of other kinds get neither.
func TestJobEnv(t *testing.T) {
	idx := 7
	for _, tc := range []struct {
		name string
		spec v4.TaskGroupSpec
		want []envVar
	}{
		{"indexed", v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindJob, Name: "train"}, JobIndex: &idx},
			[]envVar{{"BERTH_JOB_NAME", "train"}, {"BERTH_JOB_INDEX", "7"}}},
		{"non-indexed", v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindJob, Name: "train"}}, []envVar{{"BERTH_JOB_NAME", "train"}}},
		{"application", v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindApplication, Name: "web"}, JobIndex: &idx}, nil},
	} {
		if got := jobEnv(&v4.TaskGroup{Spec: tc.spec}); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
