// Package podsandbox builds the image of a pod's network sandbox (a CNI pod's, or the
// network holder of a pod that starts with an init task) on a node that cannot pull
// one: a root file system holding the host's static busybox, whose sleep is the
// entrypoint. The Docker driver imports Rootfs as a layer; the containerd driver imports
// it as an OCI archive (OCIArchive).
package podsandbox

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"time"
)

// Image is the name the drivers give the sandbox image they build. The number changes
// with what the image holds, so a node keeps no stale one.
const Image = "berth/pod-sandbox:2"

// Entrypoint is the image's: sleep, for as long as sleep allows. It is the entrypoint,
// not the cmd, so that the image also runs as a task (a pod's network holder), to which
// BCS's rules give no image cmd.
var Entrypoint = []string{"/bin/sleep", "2147483647"}

// busyboxPaths are where a static busybox is looked for on the host.
var busyboxPaths = []string{"/bin/busybox", "/usr/bin/busybox"}

// Rootfs is a tar of a root file system holding the host's static busybox as
// /bin/busybox with sh and sleep linked to it: all a sandbox needs to sleep forever.
func Rootfs() ([]byte, error) {
	var bin []byte
	var from string
	for _, p := range busyboxPaths {
		if isStatic(p) {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("sandbox rootfs: %w", err)
			}
			bin, from = b, p
			break
		}
	}
	if bin == nil {
		return nil, fmt.Errorf("no static busybox at %v (install busybox-static)", busyboxPaths)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	hdrs := []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: now},
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin)), ModTime: now},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: now},
		{Name: "bin/sleep", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: now},
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("rootfs from %s: %w", from, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bin); err != nil {
				return nil, fmt.Errorf("rootfs from %s: %w", from, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("rootfs from %s: %w", from, err)
	}
	return buf.Bytes(), nil
}

// isStatic reports whether path is an ELF executable without an interpreter, i.e. one
// that runs in an image holding nothing else.
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
