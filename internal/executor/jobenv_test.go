package executor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// A job's process that ends within its startGracePeriod has ended, not failed to start:
// exit 0 is Finish, with the job's env seen; another code is Failed with that code.
func TestJobRunsToEnd(t *testing.T) {
	e, _, rec := newProcessExecutor(t)
	job := func(name, cmd string) *v4.TaskGroup {
		tg := processTG(name, v4.ProcessTask{ProcName: "work", StartCmd: cmd, WorkPath: "${work_base_dir}", StartGracePeriod: 5})
		idx := 3
		tg.Spec.Owner, tg.Spec.JobIndex, tg.Spec.KillGracePeriod = v4.OwnerRef{Kind: v4.KindJob, Name: "train"}, &idx, 1
		return tg
	}
	e.Run(context.Background(), job("ok", `echo "$BERTH_JOB_NAME $BERTH_JOB_INDEX" > out`))
	e.Run(context.Background(), job("bad", "exit 5"))
	if st := rec.waitPhase(t, "ok", v4.StatusFinish); st.Tasks[0].Info.ExitCode != 0 {
		t.Errorf("ok: %+v", st.Tasks[0])
	}
	b, err := os.ReadFile(filepath.Join(PodDir(e.cfg.DataDir, testNS, "ok"), "work", "out"))
	if err != nil || strings.TrimSpace(string(b)) != "train 3" {
		t.Errorf("the run saw %q (%v)", b, err)
	}
	if st := rec.waitPhase(t, "bad", v4.StatusFailed); st.Tasks[0].Info.ExitCode != 5 {
		t.Errorf("bad: %+v", st.Tasks[0])
	}
	for _, name := range []string{"ok", "bad"} {
		if err := e.Remove(context.Background(), testNS, name); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	}
}
