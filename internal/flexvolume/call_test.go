package flexvolume

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A driver's odd answers fail the mount with a message naming the driver and the call.
func TestDriverAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, mount, want string
		is                error
	}{
		{"garbage", `echo 'hello, not json'`, "not a driver's JSON status", nil},
		{"no status", `echo '{"message":"x"}'`, "not a driver's JSON status", nil},
		{"failure", `echo '{"status":"Failure","message":"no such share"}'; exit 1`, "mount failed: no such share", nil},
		{"not supported", `echo '{"status":"Not supported"}'`, "not supported", ErrNotSupported},
		{"unknown status", `echo '{"status":"Maybe"}'`, `unknown status "Maybe"`, nil},
		{"endless output", `yes garbage | head -c 10000000`, "not a driver's JSON status", nil},
		{"crash", `kill -SEGV $$`, "signal: segmentation fault", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, time.Minute)
			installDriver(t, m, "acme/odd", "#!/bin/sh\ncase $1 in\ninit) echo '{\"status\":\"Success\"}' ;;\nmount) "+tc.mount+" ;;\nesac\n")
			err := m.Mount(ctxT(t), "ns/p", filepath.Join(t.TempDir(), "vol"), flex("acme/odd", nil), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "acme/odd") {
				t.Fatalf("want an error naming acme/odd with %q, got %v", tc.want, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("want %v, got %v", tc.is, err)
			}
			if recs, _ := m.Records(); len(recs) != 0 {
				t.Fatalf("a failed mount left records: %+v", recs)
			}
		})
	}
}

// A driver that logs to stdout before its JSON answer is understood.
func TestParseReplyAfterLogLines(t *testing.T) {
	r, err := parseReply([]byte("mounting...\n{\"status\":\"Success\",\"device\":\"/dev/x\"}\n"))
	if err != nil || r.Device != "/dev/x" {
		t.Fatalf("got %+v, %v", r, err)
	}
}

// A driver that hangs is killed, with its children, when its call's time is up.
func TestHangingDriverKilled(t *testing.T) {
	m := newTestManager(t, 300*time.Millisecond)
	pidFile := filepath.Join(t.TempDir(), "child")
	installDriver(t, m, "acme/hang", "#!/bin/sh\nsleep 300 &\necho $! > "+pidFile+"\nwait\n")
	err := m.Mount(ctxT(t), "ns/p", filepath.Join(t.TempDir(), "vol"), flex("acme/hang", nil), nil)
	if err == nil || !strings.Contains(err.Error(), "acme/hang: init: no answer within 300ms, killed") {
		t.Fatalf("got %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; ; i++ { // the kill is sent; the child's end is the kernel's
		if !alive(pid) {
			break
		}
		if i == 100 {
			t.Fatalf("the driver's child %d outlived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A driver runs with a minimal environment: none of the agent's variables reach it.
func TestDriverEnvironment(t *testing.T) {
	t.Setenv("BERTH_JOIN_TOKEN", "berth-secret.token")
	m := newTestManager(t, time.Minute)
	envFile := filepath.Join(t.TempDir(), "env")
	installDriver(t, m, "acme/env", "#!/bin/sh\nenv > "+envFile+"\necho '{\"status\":\"Success\"}'\n")
	dir := filepath.Join(t.TempDir(), "vol")
	if err := m.Mount(ctxT(t), "ns/p", dir, flex("acme/env", nil), nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "berth-secret") || !strings.Contains(string(b), "PATH=/usr/local/sbin") {
		t.Fatalf("driver env:\n%s", b)
	}
}
