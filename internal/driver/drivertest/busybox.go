package drivertest

import (
	"archive/tar"
	"bytes"
	"os"
	"strings"

	"github.com/berthhq/berth/internal/driver/podsandbox"
)

// BusyboxImage is the image of the container tests (the Docker driver's and the e2e
// suite's), imported from BusyboxRootfs: nothing can be pulled where they run.
const BusyboxImage = "test/busybox:1"

// busyboxApplets are linked in the image's /bin (others run as `busybox APPLET`).
var busyboxApplets = strings.Fields("sh sleep wget nc httpd cat echo ls ps env mkdir")

// BusyboxRootfs is machine.md's recipe for BusyboxImage: a tar of a root file system
// holding the host's static /bin/busybox, for `docker import`.
func BusyboxRootfs() (*bytes.Buffer, error) {
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "tmp/", "etc/"} {
		tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777})
	}
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
	tw.Write(bin)
	for _, a := range busyboxApplets {
		tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// BusyboxArchive is BusyboxImage as an OCI image layout in a tar, named
// docker.io/test/busybox:1 (the name containerd resolves test/busybox:1 to), for the
// containerd driver's Import: BusyboxRootfs as its one layer, no entrypoint and no cmd.
func BusyboxArchive() (*bytes.Buffer, error) {
	layer, err := BusyboxRootfs()
	if err != nil {
		return nil, err
	}
	return podsandbox.OCIArchive("docker.io/"+BusyboxImage, layer.Bytes(), nil)
}
