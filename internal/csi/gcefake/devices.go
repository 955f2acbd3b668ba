package gcefake

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

	"github.com/berthhq/berth/internal/csi/csidriverbuild"
)

// A disk the fake cloud attaches shows up where the GCE PD driver's node service looks
// for it, and only under names that start with berth- (berth's volume controller names
// every volume it creates berth-<random>; tests name theirs berth-test-…):
//
//   - the disk's backing file is attached as a loop device (losetup --find);
//   - /dev/sd-<device name> is a block device node with the loop device's numbers: the
//     driver resolves the link below and checks the serial number of what it finds, which
//     it only reads for /dev/sd* and /dev/nvme* devices;
//   - /dev/disk/by-id/google-<device name> links to that node, as udev links a real PD.
//
// The serial number comes from /lib/udev_containerized/scsi_id, a udev tool the driver's
// container image carries: the test installs a stand-in there (installUdevTools) that
// answers "0Google PersistentDisk <name>" for the test's nodes only.
const (
	devicePrefix = "berth-"
	byIDDir      = "/dev/disk/by-id"
	udevDir      = "/lib/udev_containerized"
	// udevMarker is in the stand-in tools, so that the test only ever removes its own.
	udevMarker = "berth-test: stand-in for GCE's udev tools"
)

// attachment is one disk attached to the instance: what attachDevice made.
type attachment struct {
	deviceName string
	mode       string
	loop       string // /dev/loopN
	node       string // /dev/sd-<device name>
	link       string // /dev/disk/by-id/google-<device name>
}

// attachDevice attaches the disk's backing file as deviceName.
func attachDevice(t testing.TB, file, deviceName, mode string) (*attachment, error) {
	if !nameRE.MatchString(deviceName) || !strings.HasPrefix(deviceName, devicePrefix) {
		return nil, fmt.Errorf("device name %q: the test attaches only valid names that start with %s", deviceName, devicePrefix)
	}
	a := &attachment{deviceName: deviceName, mode: mode,
		node: "/dev/sd-" + deviceName, link: filepath.Join(byIDDir, "google-"+deviceName)}
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
func (a *attachment) detach() error {
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

// makeByIDDir makes /dev/disk/by-id where the machine has none (no udev) and removes
// what it made when the test ends.
func makeByIDDir(t testing.TB) {
	var made []string
	for _, d := range []string{filepath.Dir(byIDDir), byIDDir} {
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

// udevTools are the stand-ins for the tools the driver's node service runs to read a
// device's serial number: scsi_id answers for the test's /dev/sd-berth-* nodes, the
// NVMe one for none.
var udevTools = map[string]string{
	"scsi_id": `#!/bin/sh
# ` + udevMarker + ` (internal/csi/gcefake)
for a; do
	case $a in
	--device=/dev/sd-` + devicePrefix + `*) printf '0Google  PersistentDisk %s\n' "${a#--device=/dev/sd-}"; exit 0 ;;
	esac
done
echo "not a device of berth's GCE PD test" >&2
exit 1
`,
	"google_nvme_id": `#!/bin/sh
# ` + udevMarker + ` (internal/csi/gcefake)
echo "no NVMe devices in berth's GCE PD test" >&2
exit 1
`,
}

// installUdevTools puts the stand-in udev tools in /lib/udev_containerized for the
// test and removes them after. Where the directory holds anything else (a GCE image with
// the real tools) it skips the test rather than touch what is not its own; stand-ins a
// killed run left behind are taken over.
func installUdevTools(t testing.TB) {
	entries, err := os.ReadDir(udevDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(udevDir, e.Name())); err != nil || !bytes.Contains(b, []byte(udevMarker)) {
			csidriverbuild.Skip(t, Driver.Name, "%s/%s is not this test's: it installs stand-ins for GCE's udev tools there and will not touch another's",
				udevDir, e.Name())
		}
	}
	if err := os.MkdirAll(udevDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for name := range udevTools {
			os.Remove(filepath.Join(udevDir, name))
		}
		if err := os.Remove(udevDir); err != nil {
			t.Errorf("remove %s: %v", udevDir, err)
		}
	})
	for name, script := range udevTools {
		p := filepath.Join(udevDir, name)
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil { // a left-behind file keeps its mode through WriteFile
			t.Fatal(err)
		}
	}
}
