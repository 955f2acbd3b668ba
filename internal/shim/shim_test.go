package shim

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadSpec(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"valid", `{"args":["/bin/sleep","1"],"dir":"/","exitFile":"/tmp/x"}`, ""},
		{"no args", `{"args":[],"exitFile":"/tmp/x"}`, "no args"},
		{"no exit file", `{"args":["/bin/true"]}`, "no exit file"},
		{"not JSON", `args: [/bin/true]`, "decode spec"},
		{"too large", `{"args":["` + strings.Repeat("a", maxSpec) + `"]}`, "larger than"},
		{"log limits", `{"args":["/bin/true"],"exitFile":"/tmp/x","logFormat":"cri","logPath":"/tmp/l","logMaxBytes":1048576,"logMaxFiles":3}`, ""},
		{"log too small", `{"args":["/bin/true"],"exitFile":"/tmp/x","logFormat":"cri","logPath":"/tmp/l","logMaxBytes":100,"logMaxFiles":3}`, "--log-max-size"},
		{"too many log files", `{"args":["/bin/true"],"exitFile":"/tmp/x","logFormat":"cri","logPath":"/tmp/l","logMaxBytes":1048576,"logMaxFiles":1000}`, "--log-max-files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readSpec(strings.NewReader(tt.in))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("readSpec: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("readSpec error = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestRecordFindsTheLastExitOfAPid(t *testing.T) {
	r := Record{Exits: []Exit{{Pid: 10, Code: 1}, {Pid: 11, Code: 0}, {Pid: 10, Code: 3}}}
	tests := []struct {
		pid      int
		wantCode int
		found    bool
	}{
		{10, 3, true},
		{11, 0, true},
		{12, 0, false},
	}
	for _, tt := range tests {
		e, ok := r.Find(tt.pid)
		if ok != tt.found || (ok && e.Code != tt.wantCode) {
			t.Errorf("Find(%d) = %+v, %v; want code %d, %v", tt.pid, e, ok, tt.wantCode, tt.found)
		}
	}
}

func TestExitOf(t *testing.T) {
	tests := []struct {
		name      string
		ws        syscall.WaitStatus
		code, sig int
	}{
		{"exit 0", syscall.WaitStatus(0), 0, 0},
		{"exit 3", syscall.WaitStatus(3 << 8), 3, 0},
		{"killed", syscall.WaitStatus(syscall.SIGKILL), 137, 9},
		{"terminated", syscall.WaitStatus(syscall.SIGTERM), 143, 15},
	}
	for _, tt := range tests {
		e := exitOf(42, tt.ws)
		if e.Pid != 42 || e.Code != tt.code || e.Signal != tt.sig {
			t.Errorf("%s: exitOf = %+v, want code %d signal %d", tt.name, e, tt.code, tt.sig)
		}
	}
}

// TestRecordKeepsTheLastExits checks that the record is written atomically, read back,
// and bounded: a service that restarts itself forever cannot grow it.
func TestRecordKeepsTheLastExits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exit.json")
	if r, err := ReadRecord(path); err != nil || len(r.Exits) != 0 {
		t.Fatalf("missing record = %+v, %v; want empty, nil", r, err)
	}
	s := &shim{spec: Spec{ExitFile: path}}
	for pid := 1; pid <= 3*keepExits; pid++ {
		s.rec.Exits = append(s.rec.Exits, Exit{Pid: pid, Code: pid % 256})
		if err := s.record(pid == 3*keepExits); err != nil {
			t.Fatal(err)
		}
	}
	r, err := ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Exits) != keepExits || !r.Done || r.Exits[keepExits-1].Pid != 3*keepExits {
		t.Fatalf("record = %+v; want the last %d exits and done", r, keepExits)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt record error = %v; want one naming the file", err)
	}
}

func TestParentOf(t *testing.T) {
	if got := parentOf(os.Getpid()); got != os.Getppid() {
		t.Fatalf("parentOf(self) = %d, want %d", got, os.Getppid())
	}
	if got := parentOf(1 << 30); got != 0 {
		t.Fatalf("parentOf(no such pid) = %d, want 0", got)
	}
}

func FuzzReadSpec(f *testing.F) {
	f.Add([]byte(`{"args":["/bin/sleep","1"],"dir":"/","env":["A=B"],"cred":{"uid":1,"gid":1,"groups":[2]},"pidFile":"/run/x.pid","exitFile":"/tmp/x"}`))
	f.Add([]byte(`{"args":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := readSpec(strings.NewReader(string(b)))
		if err == nil && (len(spec.Args) == 0 || spec.ExitFile == "") {
			t.Fatalf("readSpec accepted %q without args or exit file", b)
		}
	})
}
