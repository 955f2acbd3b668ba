package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestParseUIDRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want UIDRange
		err  string
	}{
		{"80000-89999", UIDRange{80000, 89999}, ""},
		{" 70000 - 70000 ", UIDRange{70000, 70000}, ""},
		{"0-100", UIDRange{}, "system's accounts"},
		{"90000-80000", UIDRange{}, "ends before"},
		{"80000", UIDRange{}, "FIRST-LAST"},
		{"a-b", UIDRange{}, "FIRST-LAST"},
		{"2000-4294967295", UIDRange{}, "too high"},
	} {
		got, err := ParseUIDRange(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// Each task group gets its own uid, shared by its tasks; a uid of the node's accounts or
// processes is skipped; a freed uid is handed out again only after the rest of the range.
func TestIdentitiesAcquireRelease(t *testing.T) {
	ids := newIdentities(UIDRange{First: 100, Last: 103})
	ids.taken = func() func(uint32) bool { return func(uid uint32) bool { return uid == 101 } }
	a, err := ids.acquire("ns/a")
	if err != nil || a != 100 {
		t.Fatalf("first: %d %v", a, err)
	}
	if again, _ := ids.acquire("ns/a"); again != a {
		t.Fatalf("second task of the group got %d, want %d", again, a)
	}
	b, _ := ids.acquire("ns/b")
	if b != 102 {
		t.Fatalf("b got %d, want 102 (101 is taken)", b)
	}
	if _, last := ids.release("ns/a"); last {
		t.Fatal("released with a task still holding it")
	}
	if uid, last := ids.release("ns/a"); !last || uid != a {
		t.Fatalf("last release: %d %v", uid, last)
	}
	c, _ := ids.acquire("ns/c")
	if c != 103 {
		t.Fatalf("c got %d, want 103 (next fit, not the uid just freed)", c)
	}
	d, _ := ids.acquire("ns/d")
	if d != 100 {
		t.Fatalf("d got %d, want 100 (wrapped around)", d)
	}
	if _, err := ids.acquire("ns/e"); err == nil || !strings.Contains(err.Error(), "no free uid") {
		t.Fatalf("exhausted range: %v", err)
	}
}

// Two task groups without a user run under two uids of the range, never root nor each
// other's: one cannot read the other's environment (where secrets go), its work dir or
// its secret file. The uid survives a restart of the driver and is freed, with what it
// left in /tmp, when the group's last task is removed.
func TestDynamicUsersIsolateTaskGroups(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	r := UIDRange{First: 80000 + uint32(os.Getpid()%5000), Last: 85999}
	dataDir := t.TempDir()
	d := newTestDriverWith(t, Config{DataDir: dataDir, DynamicUIDs: &r})
	start := func(id, cmd string) (*taskState, string) {
		task := nobodyTask(t, id, &v4.ProcessTask{ProcName: "sleep", StartCmd: cmd, StartGracePeriod: 1})
		task.Env = []string{"SECRET=" + id}
		task.Files = nil
		if _, err := d.Start(t.Context(), task); err != nil {
			t.Fatalf("start %s: %v; log: %s", id, err, readLog(task))
		}
		st, err := d.load(id)
		if err != nil {
			t.Fatal(err)
		}
		return st, task.WorkBaseDir
	}
	victim, victimWork := start("ns.victim.sleep", "echo secret > s.txt; echo x > /tmp/berth-dyn-$$; exec sleep 60")
	if victim.UID < r.First || victim.UID > r.Last {
		t.Fatalf("victim uid %d, want one of %d-%d", victim.UID, r.First, r.Last)
	}
	wantOwned(t, victimWork, victim.UID, 0o700)
	attack := strings.Join([]string{
		"cat /proc/" + strconv.Itoa(victim.Pid) + "/environ > environ.txt 2>/dev/null && echo environ-read >> out.txt",
		"cat " + victimWork + "/s.txt >> out.txt 2>/dev/null && echo work-read >> out.txt",
		"ls /proc/" + strconv.Itoa(victim.Pid) + "/cwd/ >> out.txt 2>/dev/null && echo cwd-listed >> out.txt",
		"id -u > uid.txt",
		"exec sleep 60",
	}, "\n")
	attacker, attackerWork := start("ns.attacker.sleep", attack)
	if attacker.UID == victim.UID || attacker.UID == 0 {
		t.Fatalf("attacker uid %d, victim %d", attacker.UID, victim.UID)
	}
	waitFile(t, filepath.Join(attackerWork, "uid.txt"))
	if got := strings.TrimSpace(readFile(t, filepath.Join(attackerWork, "uid.txt"))); got != strconv.Itoa(int(attacker.UID)) {
		t.Fatalf("attacker ran as %s, want %d", got, attacker.UID)
	}
	if b, err := os.ReadFile(filepath.Join(attackerWork, "out.txt")); err == nil && len(b) > 0 {
		t.Fatalf("the attacker reached the victim: %q", b)
	}

	// A new driver on the same data dir (an agent that restarted) keeps the uids.
	d2 := newTestDriverWith(t, Config{DataDir: dataDir, DynamicUIDs: &r})
	if uid, _ := d2.ids.acquire(victim.Group); uid != victim.UID {
		t.Fatalf("after a restart the victim's group has uid %d, want %d", uid, victim.UID)
	}
	d2.ids.release(victim.Group)

	tmp, _ := filepath.Glob("/tmp/berth-dyn-*")
	var left string
	for _, p := range tmp {
		if fi, err := os.Lstat(p); err == nil && fi.Sys().(*syscall.Stat_t).Uid == victim.UID {
			left = p
		}
	}
	if left == "" {
		t.Fatal("the victim wrote nothing to /tmp")
	}
	if err := d.Stop(t.Context(), victim.ID, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(t.Context(), victim.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(left); err == nil {
		t.Fatalf("%s of the released uid is still there", left)
	}
	if _, ok := d.ids.byGroup[victim.Group]; ok {
		t.Fatal("the uid is still held after its last task was removed")
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s was not written", path)
}
