package process

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestExecIfSimple(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"sleep 3600", "exec sleep 3600"},
		{"  ./gamesvr --port 8080  ", "exec ./gamesvr --port 8080"},
		{"./app > app.log 2>&1", "exec ./app > app.log 2>&1"},
		{"nohup ./app", "exec nohup ./app"},
		{"sleep 60 &", "sleep 60 &"},                   // a daemon: the shell backgrounds it
		{"./start.sh && ./app", "./start.sh && ./app"}, // a list
		{"cd bin; ./app", "cd bin; ./app"},
		{"./a | ./b", "./a | ./b"},
		{"(./app)", "(./app)"},
		{"if true; then ./app; fi", "if true; then ./app; fi"},
		{"PORT=1 ./app", "PORT=1 ./app"}, // exec would take the assignment for a program
		{"exec ./app", "exec ./app"},
		{"ulimit -n 65535", "ulimit -n 65535"},
		{"./app 'a b'", "./app 'a b'"},
		{"./app $(cat args)", "./app $(cat args)"},
		{"cat <<EOF\nx\nEOF", "cat <<EOF\nx\nEOF"},
		{"2>err.log ./app", "2>err.log ./app"},
		{"./app\n./other", "./app\n./other"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := execIfSimple(tc.in); got != tc.want {
			t.Errorf("execIfSimple(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// BCS's own examples write a single command with the program's name as procName: the
// shell execs it, so the task's process is the program and the name check passes.
func TestStartSingleCommandPassesTheNameCheck(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.single.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "sleep 3600", StartGracePeriod: 1})
	st := mustStart(t, d, task)
	rec, _ := d.load(task.ID)
	if st.Info.Pid != rec.ChildPid {
		t.Fatalf("task pid %d, the started process %d: the shell did not exec", st.Info.Pid, rec.ChildPid)
	}
	if comm, _ := procNameOf(st.Info.Pid); comm != "sleep" {
		t.Fatalf("task process is %q", comm)
	}
	if err := d.Stop(context.Background(), task.ID, 0); err != nil {
		t.Fatal(err)
	}
}
