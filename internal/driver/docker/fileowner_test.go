package docker

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
)

func TestResolveUser(t *testing.T) {
	image := map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\n#app:x:1:1::/:/bin/sh\nshort:x:7\nbad:x:abc:1::/:/bin/sh\napp:x:4321:4322:app:/tmp:/bin/sh\n",
		"/etc/group":  "root:x:0:\napps:x:4322:\nother:x:5000:app\n",
	}
	open := func(files map[string]string) func(string) (io.Reader, error) {
		return func(p string) (io.Reader, error) {
			if s, ok := files[p]; ok {
				return strings.NewReader(s), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	for _, c := range []struct {
		spec     string
		noPasswd bool
		uid, gid int
		err      string
	}{
		{spec: "", uid: 0, gid: 0},
		{spec: "root", uid: 0, gid: 0},
		{spec: "app", uid: 4321, gid: 4322},
		{spec: "4321", uid: 4321, gid: 4322},
		{spec: "app:other", uid: 4321, gid: 5000},
		{spec: "app:77", uid: 4321, gid: 77},
		{spec: "999", uid: 999, gid: 0},
		{spec: "999:998", uid: 999, gid: 998},
		{spec: "999", noPasswd: true, uid: 999, gid: 0},
		{spec: "0:0", noPasswd: true, uid: 0, gid: 0},
		{spec: "ghost", err: `no user "ghost"`},
		{spec: "bad", err: `no user "bad"`},
		{spec: "short", err: `no user "short"`},
		{spec: "-1", err: `no user "-1"`},
		{spec: "app:ghosts", err: `no group "ghosts"`},
		{spec: "app", noPasswd: true, err: "/etc/passwd"},
	} {
		files := image
		if c.noPasswd {
			files = nil
		}
		uid, gid, err := resolveUser(c.spec, open(files))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %d:%d %v, want error %q", c.spec, uid, gid, err, c.err)
			}
			continue
		}
		if err != nil || uid != c.uid || gid != c.gid {
			t.Errorf("%q: %d:%d %v, want %d:%d", c.spec, uid, gid, err, c.uid, c.gid)
		}
	}
	if _, _, err := resolveUser("app", func(string) (io.Reader, error) { return nil, errors.New("boom") }); err == nil {
		t.Error("a read error is not reported")
	}
}

// An image's /etc/passwd and /etc/group are the image author's: no content may crash the
// agent, and a resolved id is never negative.
func FuzzResolveUser(f *testing.F) {
	f.Add("app:other", "root:x:0:0::/:/bin/sh\napp:x:4321:4322::/:/bin/sh\n", "other:x:5000:\n")
	f.Add("4321", "app:x:4321:4322\n", "")
	f.Add(":", "::::\n", ":::\n")
	f.Add("neg:neg", "neg:x:-5:-6\n", "neg:x:-7:\n")
	f.Fuzz(func(t *testing.T, spec, passwd, group string) {
		open := func(p string) (io.Reader, error) {
			if p == "/etc/passwd" {
				return strings.NewReader(passwd), nil
			}
			return strings.NewReader(group), nil
		}
		uid, gid, err := resolveUser(spec, open)
		if err == nil && (uid < 0 || gid < 0) {
			t.Fatalf("%q: %d:%d", spec, uid, gid)
		}
	})
}

// In a remapped container every user must be able to use the task's files: read a file,
// call a socket (vcuda's, 0660: connecting needs write).
func TestOpenToAll(t *testing.T) {
	cases := []struct {
		mode, want os.FileMode
	}{
		{0o600, 0o644},
		{0o400, 0o444},
		{os.ModeSocket | 0o660, 0o666},
	}
	for _, tc := range cases {
		if got := openToAll(tc.mode); got != tc.want {
			t.Errorf("openToAll(%v) = %v, want %v", tc.mode, got, tc.want)
		}
	}
}
