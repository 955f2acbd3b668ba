package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
)

// DefaultNetworkImage is the CNI sandbox image the driver builds when Config.NetworkImage
// is empty: nothing can be pulled, so it is imported from the host's static busybox. Its
// sleep is the entrypoint, so that it also runs as a task (a pod's network holder), to
// which BCS's rules give no image CMD (command.go).
const DefaultNetworkImage = "berth/pod-sandbox:2"

// busyboxPaths are where a static busybox is looked for on the host.
var busyboxPaths = []string{"/bin/busybox", "/usr/bin/busybox"}

// sandboxImage returns the image for CNI sandboxes, building the default one when it is
// missing. A configured image is used as is (it must be present or pullable).
func (d *Driver) sandboxImage(ctx context.Context) (string, error) {
	if d.networkImage != "" {
		if _, err := d.ensureImage(ctx, &v4.Container{Image: d.networkImage}, nil); err != nil {
			return "", fmt.Errorf("network image: %w", err)
		}
		return d.networkImage, nil
	}
	d.imageMu.Lock()
	defer d.imageMu.Unlock()
	_, err := d.cli.ImageInspect(ctx, DefaultNetworkImage)
	if err == nil {
		return DefaultNetworkImage, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return "", d.wrap(err, "network image %s", DefaultNetworkImage)
	}
	rootfs, err := busyboxRootfs()
	if err != nil {
		return "", fmt.Errorf("build network image %s: %w (or set the network image)", DefaultNetworkImage, err)
	}
	d.log.Info("building the pod sandbox image", "image", DefaultNetworkImage)
	rc, err := d.cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(rootfs), SourceName: "-"}, DefaultNetworkImage,
		client.ImageImportOptions{Changes: []string{`ENTRYPOINT ["/bin/sleep", "2147483647"]`}})
	if err != nil {
		return "", d.wrap(err, "build network image %s", DefaultNetworkImage)
	}
	defer rc.Close()
	if err := streamError(rc); err != nil {
		return "", fmt.Errorf("build network image %s: %w", DefaultNetworkImage, err)
	}
	return DefaultNetworkImage, nil
}

// busyboxRootfs is a tar of a root filesystem holding the host's static busybox as
// /bin/busybox with sh and sleep linked to it: all a sandbox needs to sleep forever.
func busyboxRootfs() ([]byte, error) {
	var bin []byte
	var from string
	for _, p := range busyboxPaths {
		if isStatic(p) {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
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
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bin); err != nil {
				return nil, err
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

// HolderImage is the image of a pod's network holder (driver.NetworkHolders): the CNI
// sandbox's, a static busybox that sleeps.
func (d *Driver) HolderImage(ctx context.Context) (string, error) { return d.sandboxImage(ctx) }
