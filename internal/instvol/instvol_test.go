package instvol

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func key(ns, owner string, idx int) Key {
	return Key{Namespace: ns, Kind: v4.KindApplication, Owner: owner, Index: idx}
}

// Whatever the names, a volume's directory is six plain components below the root:
// nothing leaves it, and no component is "." or "..".
func TestVolumeRelStaysInTheTree(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		k  Key
		mp string
	}{
		{key("ns", "web", 0), "/lain/logs"},
		{key("..", "..", 0), "/../../etc"},
		{key(".", "a/../../b", 1), "/a/./b//c/"},
		{key("ns/../other", "web", 2), "/../x"},
		{key("ns", "web", 3), "/" + long},
		{key(long, long, 4), "/%2F/~x"},
		{key("ns\x00x", ".hidden", 5), "/\x00"},
	} {
		rel, err := volumeRel(tc.k, 7, tc.mp)
		if err != nil {
			t.Errorf("%v %q: %v", tc.k, tc.mp, err)
			continue
		}
		parts := strings.Split(rel, "/")
		if len(parts) != 6 || filepath.IsAbs(rel) || filepath.Clean(rel) != rel {
			t.Errorf("%v %q: %q is not six components", tc.k, tc.mp, rel)
		}
		for _, p := range parts {
			if p == "" || p == "." || p == ".." || strings.HasPrefix(p, ".") || len(p) > maxComponent {
				t.Errorf("%v %q: component %q of %q", tc.k, tc.mp, p, rel)
			}
		}
	}
	for _, mp := range []string{"", "/", "relative", "//", "/..", "/./.."} {
		if _, err := volumeRel(key("ns", "web", 0), 0, mp); err == nil {
			t.Errorf("mount path %q accepted", mp)
		}
	}
	if _, err := volumeRel(key("ns", "web", -1), 0, "/x"); err == nil {
		t.Error("a negative index accepted")
	}
}

// Different instances never share a directory: names that escape alike, cut alike or
// differ only in where a '/' or '.' falls.
func TestVolumeRelDistinct(t *testing.T) {
	long := strings.Repeat("a", 300)
	cases := []struct {
		k  Key
		mp string
	}{
		{key("ns", "web", 0), "/logs"},
		{key("ns2", "web", 0), "/logs"},
		{key("ns", "web", 1), "/logs"},
		{key("ns", "web2", 0), "/logs"},
		{Key{Namespace: "ns", Kind: v4.KindDeployment, Owner: "web"}, "/logs"},
		{key("ns", "web", 0), "/logs/a"},
		{key("ns", "web", 0), "/logs%2Fa"},
		{key("ns", "web", 0), "/logs%252Fa"},
		{key("ns/web", "0", 0), "/logs"},
		{key("ns", "web", 0), "/" + long + "b"},
		{key("ns", "web", 0), "/" + long + "c"},
		{key("ns", "web", 0), "/x~y"},
		{key("ns", "web", 0), "/x%7Ey"},
		{key(".ns", "web", 0), "/logs"},
		{key("%2Ens", "web", 0), "/logs"},
		{key("", "web", 0), "/logs"},
	}
	seen := map[string]int{}
	for i, tc := range cases {
		rel, err := volumeRel(tc.k, 0, tc.mp)
		if err != nil {
			continue // the empty namespace is refused, which is distinct enough
		}
		if j, dup := seen[rel]; dup {
			t.Errorf("cases %d and %d share %q", j, i, rel)
		}
		seen[rel] = i
	}
	if _, err := volumeRel(key("", "web", 0), 0, "/logs"); err == nil {
		t.Error("an instance without namespace accepted")
	}
}

func TestMountCreatesOneDirectoryPerVolume(t *testing.T) {
	base := t.TempDir()
	d := New(filepath.Join(base, "volumes"))
	k := key("team-a", "web", 2)
	p, err := d.Mount(k, "team-a/2.web.x", 1, "/lain/logs", Owner{})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(base, "volumes", "team-a", "application", "web", "2", "1", "lain%2Flogs")
	if p != want {
		t.Fatalf("path %q, want %q", p, want)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&fs.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Fatalf("leaf %v %v: want a sticky 0777 directory when the user is not known", fi.Mode(), err)
	}
	if fi, _ := os.Stat(d.Root()); fi.Mode().Perm() != 0o700 {
		t.Errorf("root mode %v, want 0700", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Dir(p)); fi.Mode().Perm() != 0o700 {
		t.Errorf("container dir mode %v, want 0700", fi.Mode())
	}
	if err := os.WriteFile(filepath.Join(p, "app.log"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A restart mounts the same directory and finds what was written.
	again, err := d.Mount(k, "team-a/2.web.y", 1, "/lain/logs", Owner{})
	if err != nil || again != p {
		t.Fatalf("again %q %v", again, err)
	}
	if b, _ := os.ReadFile(filepath.Join(p, "app.log")); string(b) != "kept" {
		t.Fatalf("the file is %q after the second mount", b)
	}
}

func TestMountOwnsTheDirectoryForANumericUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	d := New(filepath.Join(t.TempDir(), "volumes"))
	p, err := d.Mount(key("ns", "web", 0), "ns/0.web", 0, "/data", Owner{UID: 1234, GID: 2345, Known: true})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 1234 || st.Gid != 2345 || fi.Mode().Perm() != 0o755 {
		t.Fatalf("owner %d:%d mode %v, want 1234:2345 0755", st.Uid, st.Gid, fi.Mode())
	}
}

// A symlink where one of the agent's directories should be (none is ever made by a
// workload, but the tree may have been tampered with) is refused, not followed.
func TestMountRefusesASymlinkInTheTree(t *testing.T) {
	base := t.TempDir()
	d := New(filepath.Join(base, "volumes"))
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(d.Root(), "ns", "application", "web"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(d.Root(), "ns", "application", "web", "0")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mount(key("ns", "web", 0), "ns/0.web", 0, "/logs", Owner{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("err %v, want a refusal of the symlink", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("created %v outside the tree", entries)
	}
	// The leaf too: a symlink in its place (escaping to the root of the host) is refused.
	leafParent := filepath.Join(d.Root(), "ns", "application", "api", "0", "0")
	if err := os.MkdirAll(leafParent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(leafParent, "logs")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mount(key("ns", "api", 0), "ns/0.api", 0, "/logs", Owner{}); err == nil {
		t.Fatal("a symlinked leaf accepted")
	}
	if fi, _ := os.Stat("/"); fi.Mode()&fs.ModeSticky != 0 {
		t.Fatal("the host's root was chmodded")
	}
}

func TestSweep(t *testing.T) {
	d := New(filepath.Join(t.TempDir(), "volumes"))
	kept, gone, moved, other := key("ns", "kept", 0), key("ns", "gone", 0), key("ns", "moved", 0), key("ns2", "kept", 0)
	for i, k := range []Key{kept, gone, moved, other} {
		if _, err := d.Mount(k, "pod"+string(rune('a'+i)), 0, "/logs", Owner{}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1000, 0)
	all := func() []Key { return []Key{kept, gone, moved, other} }
	none := func() []Key { return nil }
	// Held by their pods: nothing goes, even with no task group listed.
	if removed, err := d.Sweep(none, now, 0); err != nil || len(removed) != 0 {
		t.Fatalf("removed %v %v while held", removed, err)
	}
	for _, p := range []string{"poda", "podb", "podc", "podd"} {
		d.Release(p)
	}
	// In use by a task group of the node: kept, also when marked (a replacement came).
	d.LeftForGood(kept)
	if removed, _ := d.Sweep(all, now, 0); len(removed) != 0 {
		t.Fatalf("removed %v while in use", removed)
	}
	// Left for good: at the next sweep; the others only after the grace.
	d.LeftForGood(gone)
	inUse := func() []Key { return []Key{kept} }
	removed, err := d.Sweep(inUse, now, time.Hour)
	if err != nil || len(removed) != 1 || removed[0] != gone.rel() {
		t.Fatalf("removed %v %v, want only %s", removed, err, gone.rel())
	}
	if removed, _ := d.Sweep(inUse, now.Add(59*time.Minute), time.Hour); len(removed) != 0 {
		t.Fatalf("removed %v within the grace", removed)
	}
	removed, _ = d.Sweep(inUse, now.Add(time.Hour), time.Hour)
	if len(removed) != 2 {
		t.Fatalf("removed %v after the grace, want moved and the other namespace's", removed)
	}
	if _, err := os.Stat(filepath.Join(d.Root(), "ns2")); !os.IsNotExist(err) {
		t.Errorf("the empty namespace directory stays: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d.Root(), kept.rel(), "0", "logs")); err != nil {
		t.Errorf("the kept instance's directory: %v", err)
	}
}

// A symlink a container left in its directory is removed as a link: what it points to
// stays.
func TestSweepDoesNotFollowSymlinks(t *testing.T) {
	base := t.TempDir()
	d := New(filepath.Join(base, "volumes"))
	target := filepath.Join(base, "precious")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := key("ns", "web", 0)
	p, err := d.Mount(k, "pod", 0, "/logs", Owner{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(p, "up")); err != nil {
		t.Fatal(err)
	}
	d.Release("pod")
	d.LeftForGood(k)
	if removed, err := d.Sweep(func() []Key { return nil }, time.Now(), time.Hour); err != nil || len(removed) != 1 {
		t.Fatalf("removed %v %v", removed, err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the symlink's target went: %v", err)
	}
	if _, err := os.Stat(d.Root()); err != nil {
		t.Fatalf("the root went: %v", err)
	}
}

// A deployment's revisions run the same instances: their task groups share a key.
func TestKeyOfADeploymentsTaskGroup(t *testing.T) {
	tg := &v4.TaskGroup{}
	tg.Metadata.Namespace = "ns"
	tg.Spec.Owner, tg.Spec.Index = v4.OwnerRef{Kind: v4.KindApplication, Name: "web-v3"}, 2
	if k := KeyOf(tg); k != (Key{Namespace: "ns", Kind: v4.KindApplication, Owner: "web-v3", Index: 2}) {
		t.Errorf("key %v", k)
	}
	tg.Metadata.Annotations = map[string]string{v4.ControlledByAnnotation: "deployment/web"}
	if k := KeyOf(tg); k != (Key{Namespace: "ns", Kind: v4.KindDeployment, Owner: "web", Index: 2}) {
		t.Errorf("key %v, want the deployment's", k)
	}
}

// What a container wrote may be a tree that takes long to remove: a sweep removes it
// without the lock, so that a start on the node (a Mount) does not wait for it, and the
// instance mounted again meanwhile gets a directory of its own, not the one going.
func TestSweepRemovesOutsideTheLock(t *testing.T) {
	d := New(filepath.Join(t.TempDir(), "volumes"))
	gone, other := key("ns", "gone", 0), key("ns", "other", 0)
	p, err := d.Mount(gone, "pod", 0, "/logs", Owner{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "old.log"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Release("pod")
	d.LeftForGood(gone)
	removing, mounted := make(chan struct{}), make(chan error, 2)
	d.removeTree = func(root *os.Root, name string) error {
		close(removing)
		select { // the removal goes on until the starts are done
		case err := <-mounted:
			if err != nil {
				return err
			}
		case <-time.After(10 * time.Second):
			return errors.New("a Mount waited for the removal")
		}
		return root.RemoveAll(name)
	}
	done := make(chan error, 1)
	go func() {
		removed, err := d.Sweep(func() []Key { return nil }, time.Now(), time.Hour)
		if err == nil && len(removed) != 1 {
			err = fmt.Errorf("removed %v", removed)
		}
		done <- err
	}()
	<-removing
	_, err = d.Mount(other, "pod2", 0, "/logs", Owner{})
	if err == nil {
		var again string
		again, err = d.Mount(gone, "pod3", 0, "/logs", Owner{})
		if err == nil && again != p {
			err = fmt.Errorf("mounted %s, want %s", again, p)
		}
	}
	mounted <- err
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(p); err != nil || len(entries) != 0 {
		t.Fatalf("the instance mounted again holds %v (%v): the old run's files", entries, err)
	}
	if _, err := os.Stat(filepath.Join(d.Root(), trashDir)); !os.IsNotExist(err) {
		t.Fatalf("the trash stays: %v", err)
	}
}
