package flexvolume

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeAttachDriver attaches a made-up device and mounts nothing: the calls and their
// arguments are what the test reads.
const fakeAttachDriver = `#!/bin/sh
echo "$*" | sed 's/{[^}]*}/OPTS/' >> LOG
case $1 in
init) echo '{"status":"Success","capabilities":{"attach":true}}' ;;
attach) echo '{"status":"Success","device":"/dev/fake0"}' ;;
waitforattach) echo '{"status":"Success","device":"/dev/fake0p1"}' ;;
mountdevice|detach) echo '{"status":"Success"}' ;;
*) echo '{"status":"Not supported"}' ;;
esac
`

// A driver with the attach capability is attached, waited for and mounted with its
// device; the record keeps the device, which is detached when the volume goes.
func TestAttachFlow(t *testing.T) {
	m := newTestManager(t, time.Minute)
	calls := installDriver(t, m, "acme/blk", fakeAttachDriver)
	dir := filepath.Join(t.TempDir(), "vol")
	ctx := ctxT(t)
	must(t, m.Mount(ctx, "ns/db-0", dir, flex("acme/blk", map[string]string{"size": "1"}), nil))
	recs, err := m.Records()
	if err != nil || len(recs) != 1 || !recs[0].Attached || recs[0].Device != "/dev/fake0p1" {
		t.Fatalf("records: %+v, %v", recs, err)
	}
	must(t, m.Unmount(ctx, "ns/db-0", dir, nil))
	want := "init\nattach OPTS node-1\nwaitforattach /dev/fake0 OPTS\nmountdevice " + dir + " /dev/fake0p1 OPTS\ndetach /dev/fake0p1 node-1\n"
	if got := calls(); got != want {
		t.Fatalf("driver calls:\n%s\nwant:\n%s", got, want)
	}
	if recs, _ := m.Records(); len(recs) != 0 {
		t.Fatalf("records after unmount: %+v", recs)
	}
}

// loopDriver attaches an ext4 image file (option "image") as a loop device and mounts it.
const loopDriver = `#!/bin/sh
op=$1; shift
echo "$op" >> LOG
ok() { echo "{\"status\":\"Success\"$1}"; }
fail() { echo "{\"status\":\"Failure\",\"message\":\"$1\"}"; exit 1; }
case $op in
init) ok ',"capabilities":{"attach":true}' ;;
attach)
	img=$(printf '%s' "$1" | sed -n 's/.*"image":"\([^"]*\)".*/\1/p')
	dev=$(losetup -f --show "$img") || fail "losetup $img"
	ok ",\"device\":\"$dev\"" ;;
waitforattach) [ -b "$1" ] || fail "no device $1"; ok ",\"device\":\"$1\"" ;;
mountdevice) mkdir -p "$1"; mount -t ext4 "$2" "$1" || fail "mount $2"; ok ;;
unmountdevice) umount "$1" || fail "umount $1"; ok ;;
detach) losetup -d "$1" || fail "losetup -d $1"; ok ;;
*) echo '{"status":"Not supported"}' ;;
esac
`

// A real attachable driver: an ext4 file system in a file, attached as a loop device.
func TestLoopDriver(t *testing.T) {
	requireRoot(t)
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	must(t, os.WriteFile(img, nil, 0o600))
	must(t, os.Truncate(img, 8<<20))
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("losetup", "-f").CombinedOutput(); err != nil {
		t.Skipf("no free loop device: %v: %s", err, out)
	}
	m := newTestManager(t, time.Minute)
	calls := installDriver(t, m, "acme/loop", loopDriver)
	dir := filepath.Join(t.TempDir(), "vol")
	ctx := ctxT(t)
	if err := m.Mount(ctx, "ns/db-0", dir, flex("acme/loop", map[string]string{"image": img}), nil); err != nil {
		if strings.Contains(err.Error(), "losetup") {
			t.Skipf("loop devices do not work here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unmount(ctx, "ns/db-0", dir, nil) })
	must(t, os.WriteFile(filepath.Join(dir, "kept"), []byte("on the disk"), 0o644))
	recs, _ := m.Records()
	if len(recs) != 1 || !strings.HasPrefix(recs[0].Device, "/dev/loop") || !mounted(t, dir) {
		t.Fatalf("records: %+v", recs)
	}
	dev := recs[0].Device
	must(t, m.Unmount(ctx, "ns/db-0", dir, nil))
	if mounted(t, dir) {
		t.Fatal("still mounted")
	}
	if out, _ := exec.Command("losetup", "-j", img).Output(); strings.Contains(string(out), dev) {
		t.Fatalf("%s still attached: %s", dev, out)
	}
	if got := calls(); got != "init\nattach\nwaitforattach\nmountdevice\nunmountdevice\ndetach\n" {
		t.Fatalf("driver calls:\n%s", got)
	}
}
