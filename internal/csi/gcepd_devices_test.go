package csi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A disk the fake cloud attaches shows up where the GCE PD driver's node service looks
// for it, and only under names that start with berth-test-:
//
//   - the disk's backing file is attached as a loop device (losetup --find);
//   - /dev/sd-<device name> is a block device node with the loop device's numbers: the
//     driver resolves the link below and checks the serial number of what it finds, which
//     it only reads for /dev/sd* and /dev/nvme* devices;
//   - /dev/disk/by-id/google-<device name> links to that node, as udev links a real PD.
//
// The serial number comes from /lib/udev_containerized/scsi_id, a udev tool the driver's
// container image carries: the test installs a stand-in there (installGCEUdevTools) that
// answers "0Google PersistentDisk <name>" for the test's nodes only.
const (
	gceDevicePrefix = "berth-test-"
	gceByIDDir      = "/dev/disk/by-id"
	gceUdevDir      = "/lib/udev_containerized"
	// gceUdevMarker is in the stand-in tools, so that the test only ever removes its own.
	gceUdevMarker = "berth-test: stand-in for GCE's udev tools (internal/csi/gcepd_devices_test.go)"
)

// gceAttachment is one disk attached to the instance: what attachDevice made.
type gceAttachment struct {
	deviceName string
	mode       string
	loop       string // /dev/loopN
	node       string // /dev/sd-<device name>
	link       string // /dev/disk/by-id/google-<device name>
}

// attachDevice attaches the disk's backing file as deviceName.
func attachDevice(t *testing.T, file, deviceName, mode string) (*gceAttachment, error) {
	if !gceNameRE.MatchString(deviceName) || !strings.HasPrefix(deviceName, gceDevicePrefix) {
		return nil, fmt.Errorf("device name %q: the test attaches only valid names that start with %s", deviceName, gceDevicePrefix)
	}
	a := &gceAttachment{deviceName: deviceName, mode: mode,
		node: "/dev/sd-" + deviceName, link: filepath.Join(gceByIDDir, "google-"+deviceName)}
	for _, p := range []string{a.node, a.link} {
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("%s exists already: another test's disk, or one left behind", p)
		}
	}
	args := []string{"--find", "--show", file}
	if mode == "READ_ONLY" {
		args = append([]string{"--read-only"}, args...)
	}
	out, err := command("losetup", args...)
	if err != nil {
		return nil, err
	}
	a.loop = strings.TrimSpace(out)
	var st syscall.Stat_t
	if err := syscall.Stat(a.loop, &st); err != nil {
		return nil, errors.Join(fmt.Errorf("stat %s: %w", a.loop, err), a.detach())
	}
	if err := syscall.Mknod(a.node, syscall.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		a.node = "" // not ours to remove
		return nil, errors.Join(fmt.Errorf("mknod %s: %w", "/dev/sd-"+deviceName, err), a.detach())
	}
	if err := os.Symlink(a.node, a.link); err != nil {
		a.link = ""
		return nil, errors.Join(err, a.detach())
	}
	t.Logf("attached %s as %s (%s)", deviceName, a.loop, a.link)
	return a, nil
}

// detach undoes attachDevice. The loop device is detached even if a file system on it is
// still mounted (a test that failed half-way): the kernel then frees it at the unmount.
func (a *gceAttachment) detach() error {
	var errs []error
	for _, p := range []string{a.link, a.node} {
		if p != "" {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if a.loop != "" {
		if _, err := command("losetup", "--detach", a.loop); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// command runs a short tool under a bound and returns its output.
func command(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// makeGCEByIDDir makes /dev/disk/by-id where the machine has none (no udev) and removes
// what it made when the test ends.
func makeGCEByIDDir(t *testing.T) {
	var made []string
	for _, d := range []string{filepath.Dir(gceByIDDir), gceByIDDir} {
		if err := os.Mkdir(d, 0o755); err == nil {
			made = append(made, d)
		} else if !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			if err := os.Remove(made[i]); err != nil {
				t.Errorf("remove %s: %v", made[i], err)
			}
		}
	})
}

// gceUdevTools are the stand-ins for the tools the driver's node service runs to read a
// device's serial number: scsi_id answers for the test's /dev/sd-berth-test-* nodes, the
// NVMe one for none.
var gceUdevTools = map[string]string{
	"scsi_id": `#!/bin/sh
# ` + gceUdevMarker + `
for a; do
	case $a in
	--device=/dev/sd-` + gceDevicePrefix + `*) printf '0Google  PersistentDisk %s\n' "${a#--device=/dev/sd-}"; exit 0 ;;
	esac
done
echo "not a device of berth's GCE PD test" >&2
exit 1
`,
	"google_nvme_id": `#!/bin/sh
# ` + gceUdevMarker + `
echo "no NVMe devices in berth's GCE PD test" >&2
exit 1
`,
}

// installGCEUdevTools puts the stand-in udev tools in /lib/udev_containerized for the
// test and removes them after. Where the directory holds anything else (a GCE image with
// the real tools) it skips the test rather than touch what is not its own; stand-ins a
// killed run left behind are taken over.
func installGCEUdevTools(t *testing.T) {
	entries, err := os.ReadDir(gceUdevDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(gceUdevDir, e.Name())); err != nil || !bytes.Contains(b, []byte(gceUdevMarker)) {
			skip := t.Skipf
			if csiRequired(gceDriver.name) {
				skip = t.Fatalf
			}
			skip("%s/%s is not this test's: it installs stand-ins for GCE's udev tools there and will not touch another's", gceUdevDir, e.Name())
		}
	}
	if err := os.MkdirAll(gceUdevDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for name := range gceUdevTools {
			os.Remove(filepath.Join(gceUdevDir, name))
		}
		if err := os.Remove(gceUdevDir); err != nil {
			t.Errorf("remove %s: %v", gceUdevDir, err)
		}
	})
	for name, script := range gceUdevTools {
		p := filepath.Join(gceUdevDir, name)
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil { // a left-behind file keeps its mode through WriteFile
			t.Fatal(err)
		}
	}
}
