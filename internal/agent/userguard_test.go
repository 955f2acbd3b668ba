package agent

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

func nobodyUID(t testing.TB) uint32 {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	return uint32(uid)
}

// A spec's user runs only when the node's operator listed it; root only as admission
// spelled it (so the root privilege was checked); never an account in a group as good
// as root (docker, sudo, disk, ...), listed or not.
func TestUserPolicy(t *testing.T) {
	nobody := nobodyUID(t)
	dockerish := ""
	if os.Geteuid() == 0 && commandExists("useradd") && commandExists("groupadd") {
		// An account in a forbidden group, made for the test.
		dockerish = "berthtdock" + strconv.Itoa(os.Getpid()%10000)
		grp := dockerish + "g"
		if out, err := exec.Command("groupadd", grp).CombinedOutput(); err != nil {
			t.Fatalf("groupadd: %v %s", err, out)
		}
		if out, err := exec.Command("useradd", "--no-create-home", "-G", grp, dockerish).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("userdel", dockerish).Run(); exec.Command("groupdel", grp).Run() })
		p, err := newUserPolicy(nil, []string{grp})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.check("f", dockerish); err == nil || !strings.Contains(err.Error(), "root-equivalent") {
			t.Errorf("member of a forbidden group: %v", err)
		}
		if _, err := newUserPolicy([]string{dockerish}, []string{grp}); err == nil {
			t.Error("a member of a forbidden group was accepted in --task-users")
		}
	}
	p, err := newUserPolicy([]string{"nobody"}, DefaultForbiddenGroups)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spelled string
		err     string
	}{
		{"nobody", ""},
		{strconv.Itoa(int(nobody)), ""},
		{"0" + strconv.Itoa(int(nobody)), ""}, // the same uid
		{"root", ""},                          // the root privilege's, checked elsewhere
		{"0", ""},
		{"00", ""},
		{"daemon", "--task-users"},
		{"no-such-user-here", "no such user"},
		{"4000000", "no such user"},
	} {
		err := p.check("spec.user", c.spelled)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v, want %q", c.spelled, err, c.err)
		}
	}
	if _, err := newUserPolicy([]string{"root"}, nil); err == nil {
		t.Error("root accepted in --task-users")
	}
	if _, err := newUserPolicy([]string{"no-such-user-here"}, nil); err == nil {
		t.Error("a missing user accepted in --task-users")
	}
	spec := &v4.PodSpec{Processes: []v4.ProcessTask{{User: "daemon",
		Secrets: []v4.SecretRef{{SecretName: "s", Items: []v4.SecretItem{{Type: "file", KeyOrPath: "k", User: "bin"}}}}}}}
	errs := p.checkSpec(spec)
	if len(errs) != 2 || !strings.Contains(errs[1].Error(), "secrets[0].items[0].user") {
		t.Errorf("checkSpec: %v, want the process's and the file's user", errs)
	}
}

// Whatever a tenant writes as a user, the node either refuses it or it is not uid 0, or
// admission spelled it as root and so asked for the root privilege.
func FuzzUserCheck(f *testing.F) {
	for _, s := range []string{"root", "0", "00", "000000000", "toor", "nobody", "65534", "-0", "+0", "0x0", " 0", "root\x00"} {
		f.Add(s)
	}
	p, err := newUserPolicy([]string{"nobody"}, DefaultForbiddenGroups)
	if err != nil {
		f.Skip(err)
	}
	f.Fuzz(func(t *testing.T, spelled string) {
		if p.check("f", spelled) != nil {
			return
		}
		u, err := resolveUser(spelled)
		if err != nil {
			t.Fatalf("%q admitted but does not resolve: %v", spelled, err)
		}
		if u.uid == 0 && !acl.IsRootUser(spelled) {
			t.Fatalf("%q runs as uid 0 without the root privilege", spelled)
		}
	})
}
