// Package gcefake is a test double of Google Cloud's metadata server and Compute API, on
// loopback, for running the real GCE Persistent Disk CSI driver on a machine that is not
// in Google Cloud: internal/csi's client test and test/e2e's volumes use it. It is used
// by tests only.
//
// Only the cloud's API is fake. A disk is a sparse file in the cloud's directory, and
// attaching it attaches that file as a loop device where the driver's node service looks
// for an attached disk (devices.go), so the driver formats and mounts a real block
// device: that part needs root and changes the machine (/dev, /lib/udev_containerized)
// for as long as the cloud runs, which is why one cloud at a time runs on a machine.
package gcefake

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The one project, zone and instance of the fake cloud.
const (
	Project       = "berth-test-project"
	ProjectNumber = "123"
	Zone          = "us-test1-a"
	Instance      = "berth-test-node"
	MachineType   = "n2-standard-2"
	token         = "berth-test-token"
	// maxDiskGB is the largest persistent disk GCE creates (64 TiB).
	maxDiskGB = 64 << 10
)

// nameRE is GCE's rule for resource names (RFC 1035 labels); the fake refuses others,
// which also keeps every name it turns into a path a single plain path element.
var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Cloud is the Google Cloud the GCE PD driver is given, on 127.0.0.1 only: the metadata
// server of one instance (project, zone, name, machine type and a service account's
// token) and the few Compute API calls the driver makes (disks insert, get and delete;
// instances get, attachDisk and detachDisk; zone operations, DONE at once).
type Cloud struct {
	t        testing.TB
	dir      string // the disks' backing files
	metadata *httptest.Server
	compute  *httptest.Server

	mu       sync.Mutex
	disks    map[string]*disk // by name
	ops      int
	unserved []string // requests the fake does not serve, reported when the test ends
}

type disk struct {
	name     string
	sizeGB   int64
	diskType string // the type's URL as the driver sent it
	file     string
	attached *attachment // nil: detached
}

// Disk is what a test sees of one of the cloud's disks.
type Disk struct {
	Name     string
	SizeGB   int64
	DiskType string // the type's URL as the driver sent it
	// File is the disk's backing file.
	File     string
	Attached bool
}

// New prepares this machine as the cloud's instance (devices.go), waiting for another
// test's cloud to end first, and starts the cloud's two servers on 127.0.0.1. The test's
// cleanup detaches whatever is still attached, stops them and undoes the preparation.
// It needs root.
func New(t testing.TB) *Cloud {
	t.Helper()
	prepareNode(t)
	c := &Cloud{t: t, dir: t.TempDir(), disks: map[string]*disk{}}
	c.metadata = httptest.NewServer(http.HandlerFunc(c.serveMetadata))
	c.compute = httptest.NewServer(http.HandlerFunc(c.serveCompute))
	t.Cleanup(func() {
		c.metadata.Close()
		c.compute.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, d := range c.disks {
			if d.attached != nil {
				if err := d.attached.detach(); err != nil {
					t.Errorf("detach disk %s: %v", d.name, err)
				}
				d.attached = nil
			}
		}
		if len(c.unserved) > 0 {
			t.Logf("requests the fake cloud does not serve:\n%s", strings.Join(c.unserved, "\n"))
		}
	})
	return c
}

// MetadataHost is the GCE_METADATA_HOST value that sends the driver's metadata client here.
func (c *Cloud) MetadataHost() string { return strings.TrimPrefix(c.metadata.URL, "http://") }

// ComputeURL is the driver's --compute-endpoint.
func (c *Cloud) ComputeURL() string { return c.compute.URL }

// Disk returns the named disk, for the test's checks.
func (c *Cloud) Disk(name string) (Disk, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.disks[name]
	if !ok {
		return Disk{}, false
	}
	return Disk{Name: d.name, SizeGB: d.sizeGB, DiskType: d.diskType, File: d.file, Attached: d.attached != nil}, true
}

// FSType is the type of the file system on the disk (blkid), "" for none. Read it only
// while the disk is detached: the kernel may still hold blocks of a mounted one.
func (d Disk) FSType() (string, error) {
	out, err := command("blkid", "-o", "value", "-s", "TYPE", d.File)
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 2 {
		return "", nil // blkid found no file system
	}
	return strings.TrimSpace(out), err
}

// ReadFile reads a file of the ext4 file system on the disk (debugfs), by its absolute
// path in that file system. Read it only while the disk is detached.
func (d Disk) ReadFile(name string) (string, error) {
	if !strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("read %s on disk %s: want an absolute path", name, d.Name)
	}
	return command("debugfs", "-R", "cat "+name, d.File)
}

func (c *Cloud) unserve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.unserved = append(c.unserved, r.Method+" "+r.URL.String())
	c.mu.Unlock()
	apiError(w, http.StatusNotFound, "notFound", "the fake cloud does not serve "+r.URL.Path)
}

func (c *Cloud) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Metadata-Flavor", "Google")
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "missing Metadata-Flavor: Google", http.StatusForbidden)
		return
	}
	values := map[string]string{
		"project/project-id":         Project,
		"project/numeric-project-id": ProjectNumber,
		"instance/zone":              "projects/" + ProjectNumber + "/zones/" + Zone,
		"instance/name":              Instance,
		"instance/id":                "4242",
		"instance/hostname":          Instance + "." + Zone + ".c." + Project + ".internal",
		"instance/machine-type":      "projects/" + ProjectNumber + "/machineTypes/" + MachineType,
		"universe/universe-domain":   "googleapis.com",
	}
	p := strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/")
	if v, ok := values[p]; ok {
		fmt.Fprint(w, v)
		return
	}
	if p == "instance/service-accounts/default/token" {
		writeJSON(w, map[string]any{"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
		return
	}
	c.unserve(w, r)
}
