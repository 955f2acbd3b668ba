package csi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// gceCloud is the Google Cloud the GCE PD driver is given in its test, on loopback only:
// the metadata server of one instance (project, zone, name, machine type and a service
// account's token) and the few Compute API calls the driver makes (disks insert, get and
// delete; instances get, attachDisk and detachDisk; zone operations, DONE at once). Only
// the cloud's API is fake: a disk is a sparse file in the cloud's directory, and
// attaching it attaches that file as a loop device where the driver's node service looks
// for an attached disk (gcepd_devices_test.go), so the driver formats and mounts a real
// block device.
type gceCloud struct {
	t        *testing.T
	dir      string // the disks' backing files
	metadata *httptest.Server
	compute  *httptest.Server

	mu       sync.Mutex
	disks    map[string]*gceDisk // by name
	ops      int
	unserved []string // requests the fake does not serve, reported when the test ends
}

// The one project, zone and instance of the fake cloud.
const (
	gceProject       = "berth-test-project"
	gceProjectNumber = "123"
	gceZone          = "us-test1-a"
	gceInstance      = "berth-test-node"
	gceMachineType   = "n2-standard-2"
	gceToken         = "berth-test-token"
	// gceMaxDiskGB is the largest persistent disk GCE creates (64 TiB).
	gceMaxDiskGB = 64 << 10
)

// gceNameRE is GCE's rule for resource names (RFC 1035 labels); the fake refuses others,
// which also keeps every name it turns into a path a single plain path element.
var gceNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

type gceDisk struct {
	name     string
	sizeGB   int64
	diskType string // the type's URL as the driver sent it
	file     string
	attached *gceAttachment // nil: detached
}

// newGCECloud starts the fake cloud's two servers on 127.0.0.1; the test's cleanup
// detaches whatever is still attached and stops them.
func newGCECloud(t *testing.T) *gceCloud {
	c := &gceCloud{t: t, dir: t.TempDir(), disks: map[string]*gceDisk{}}
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

// metadataHost is the GCE_METADATA_HOST value that sends the driver's metadata client here.
func (c *gceCloud) metadataHost() string { return strings.TrimPrefix(c.metadata.URL, "http://") }

func (c *gceCloud) unserve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.unserved = append(c.unserved, r.Method+" "+r.URL.String())
	c.mu.Unlock()
	gceError(w, http.StatusNotFound, "notFound", "the fake cloud does not serve "+r.URL.Path)
}

func (c *gceCloud) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Metadata-Flavor", "Google")
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "missing Metadata-Flavor: Google", http.StatusForbidden)
		return
	}
	values := map[string]string{
		"project/project-id":         gceProject,
		"project/numeric-project-id": gceProjectNumber,
		"instance/zone":              "projects/" + gceProjectNumber + "/zones/" + gceZone,
		"instance/name":              gceInstance,
		"instance/id":                "4242",
		"instance/hostname":          gceInstance + "." + gceZone + ".c." + gceProject + ".internal",
		"instance/machine-type":      "projects/" + gceProjectNumber + "/machineTypes/" + gceMachineType,
		"universe/universe-domain":   "googleapis.com",
	}
	p := strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/")
	if v, ok := values[p]; ok {
		fmt.Fprint(w, v)
		return
	}
	if p == "instance/service-accounts/default/token" {
		writeJSON(w, map[string]any{"access_token": gceToken, "expires_in": 3600, "token_type": "Bearer"})
		return
	}
	c.unserve(w, r)
}

// serveCompute answers /compute/{v1,beta,alpha}/projects/P/zones/Z/... for the one
// project and zone, with the bearer token the metadata server handed out.
func (c *gceCloud) serveCompute(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+gceToken {
		gceError(w, http.StatusUnauthorized, "authError", "no valid bearer token")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 5 || parts[0] != "compute" || parts[2] != "projects" || parts[4] != "zones" {
		c.unserve(w, r)
		return
	}
	if parts[3] != gceProject {
		gceError(w, http.StatusNotFound, "notFound", "The resource 'projects/"+parts[3]+"' was not found")
		return
	}
	if len(parts) == 5 && r.Method == http.MethodGet { // the region's zones: just the one
		writeJSON(w, map[string]any{"kind": "compute#zoneList", "items": []map[string]any{
			{"kind": "compute#zone", "name": gceZone, "region": "us-test1", "status": "UP"}}})
		return
	}
	if len(parts) < 7 || parts[5] != gceZone {
		gceError(w, http.StatusNotFound, "notFound", "The resource '"+strings.Join(parts[2:], "/")+"' was not found")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch rest := parts[6:]; {
	case len(rest) == 1 && rest[0] == "disks" && r.Method == http.MethodPost:
		c.insertDisk(w, r)
	case len(rest) == 2 && rest[0] == "disks" && r.Method == http.MethodGet:
		c.getDisk(w, rest[1])
	case len(rest) == 2 && rest[0] == "disks" && r.Method == http.MethodDelete:
		c.deleteDisk(w, rest[1])
	case len(rest) >= 2 && rest[0] == "instances" && rest[1] != gceInstance:
		gceError(w, http.StatusNotFound, "notFound", "The resource 'instances/"+rest[1]+"' was not found")
	case len(rest) == 2 && rest[0] == "instances" && r.Method == http.MethodGet:
		writeJSON(w, c.instance())
	case len(rest) == 3 && rest[0] == "instances" && rest[2] == "attachDisk" && r.Method == http.MethodPost:
		c.attachDisk(w, r)
	case len(rest) == 3 && rest[0] == "instances" && rest[2] == "detachDisk" && r.Method == http.MethodPost:
		c.detachDisk(w, r.URL.Query().Get("deviceName"))
	case len(rest) >= 2 && rest[0] == "operations" && slices.Contains([]string{http.MethodGet, http.MethodPost}, r.Method):
		c.getOperation(w, rest[1])
	default:
		c.unserve(w, r)
	}
}

func (c *gceCloud) zoneURL() string {
	return c.compute.URL + "/compute/v1/projects/" + gceProject + "/zones/" + gceZone
}

func (c *gceCloud) diskJSON(d *gceDisk) map[string]any {
	disk := map[string]any{
		"kind": "compute#disk", "name": d.name, "sizeGb": strconv.FormatInt(d.sizeGB, 10),
		"type": d.diskType, "status": "READY", "zone": c.zoneURL(),
		"selfLink": c.zoneURL() + "/disks/" + d.name,
	}
	if d.attached != nil {
		disk["users"] = []string{c.zoneURL() + "/instances/" + gceInstance}
	}
	return disk
}

func (c *gceCloud) instance() map[string]any {
	disks := []map[string]any{}
	for _, d := range c.disks {
		if d.attached != nil {
			disks = append(disks, map[string]any{"kind": "compute#attachedDisk", "type": "PERSISTENT",
				"deviceName": d.attached.deviceName, "mode": d.attached.mode, "source": c.zoneURL() + "/disks/" + d.name})
		}
	}
	return map[string]any{
		"kind": "compute#instance", "name": gceInstance, "id": "4242", "status": "RUNNING", "zone": c.zoneURL(),
		"machineType": c.zoneURL() + "/machineTypes/" + gceMachineType, "disks": disks,
		"selfLink": c.zoneURL() + "/instances/" + gceInstance,
	}
}

// operation answers a call that changed something with an operation already DONE.
func (c *gceCloud) operation(w http.ResponseWriter, kind, target string) {
	c.ops++
	writeJSON(w, map[string]any{"kind": "compute#operation", "name": "operation-" + strconv.Itoa(c.ops),
		"operationType": kind, "targetLink": target, "status": "DONE", "progress": 100, "zone": c.zoneURL()})
}

func (c *gceCloud) getOperation(w http.ResponseWriter, name string) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "operation-"))
	if err != nil || n < 1 || n > c.ops {
		gceError(w, http.StatusNotFound, "notFound", "The resource 'operations/"+name+"' was not found")
		return
	}
	writeJSON(w, map[string]any{"kind": "compute#operation", "name": name, "status": "DONE", "progress": 100, "zone": c.zoneURL()})
}

func (c *gceCloud) insertDisk(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string `json:"name"`
		SizeGB int64  `json:"sizeGb,string"`
		Type   string `json:"type"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		gceError(w, http.StatusBadRequest, "parseError", err.Error())
		return
	}
	switch {
	case !gceNameRE.MatchString(req.Name):
		gceError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for field 'resource.name': '%s'", req.Name))
		return
	case req.SizeGB < 1 || req.SizeGB > gceMaxDiskGB:
		gceError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for field 'resource.sizeGb': '%d'. Disk size cannot be larger than 64 TB.", req.SizeGB))
		return
	case c.disks[req.Name] != nil:
		gceError(w, http.StatusConflict, "alreadyExists", "The resource 'disks/"+req.Name+"' already exists")
		return
	}
	d := &gceDisk{name: req.Name, sizeGB: req.SizeGB, diskType: req.Type, file: filepath.Join(c.dir, req.Name)}
	f, err := os.Create(d.file)
	if err == nil {
		err = f.Truncate(req.SizeGB << 30) // sparse: only what the file system writes takes room
		f.Close()
	}
	if err != nil {
		gceError(w, http.StatusInternalServerError, "backendError", err.Error())
		return
	}
	c.disks[d.name] = d
	c.operation(w, "insert", c.zoneURL()+"/disks/"+d.name)
}

func (c *gceCloud) getDisk(w http.ResponseWriter, name string) {
	d := c.disks[name]
	if d == nil {
		gceError(w, http.StatusNotFound, "notFound", "The resource 'disks/"+name+"' was not found")
		return
	}
	writeJSON(w, c.diskJSON(d))
}

func (c *gceCloud) deleteDisk(w http.ResponseWriter, name string) {
	d := c.disks[name]
	switch {
	case d == nil:
		gceError(w, http.StatusNotFound, "notFound", "The resource 'disks/"+name+"' was not found")
		return
	case d.attached != nil:
		gceError(w, http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The disk resource 'disks/"+name+"' is already being used by 'instances/"+gceInstance+"'")
		return
	}
	if err := os.Remove(d.file); err != nil {
		gceError(w, http.StatusInternalServerError, "backendError", err.Error())
		return
	}
	delete(c.disks, name)
	c.operation(w, "delete", c.zoneURL()+"/disks/"+name)
}

func (c *gceCloud) attachDisk(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceName string `json:"deviceName"`
		Source     string `json:"source"`
		Mode       string `json:"mode"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		gceError(w, http.StatusBadRequest, "parseError", err.Error())
		return
	}
	wantSource := "projects/" + gceProject + "/zones/" + gceZone + "/disks/"
	i := strings.Index(req.Source, wantSource)
	if i < 0 {
		gceError(w, http.StatusBadRequest, "invalid", "Invalid value for field 'resource.source': '"+req.Source+"'")
		return
	}
	d := c.disks[req.Source[i+len(wantSource):]]
	if d == nil {
		gceError(w, http.StatusNotFound, "notFound", "The resource '"+req.Source+"' was not found")
		return
	}
	if d.attached != nil {
		gceError(w, http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The disk resource '"+req.Source+"' is already being used by 'instances/"+gceInstance+"'")
		return
	}
	if req.Mode == "" {
		req.Mode = "READ_WRITE"
	}
	a, err := attachDevice(c.t, d.file, req.DeviceName, req.Mode)
	if err != nil {
		gceError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("attach disk %s: %v", d.name, err))
		return
	}
	d.attached = a
	c.operation(w, "attachDisk", c.zoneURL()+"/instances/"+gceInstance)
}

func (c *gceCloud) detachDisk(w http.ResponseWriter, deviceName string) {
	for _, d := range c.disks {
		if d.attached != nil && d.attached.deviceName == deviceName {
			if err := d.attached.detach(); err != nil {
				gceError(w, http.StatusInternalServerError, "backendError", err.Error())
				return
			}
			d.attached = nil
			c.operation(w, "detachDisk", c.zoneURL()+"/instances/"+gceInstance)
			return
		}
	}
	gceError(w, http.StatusBadRequest, "invalid", "No attached disk found with device name '"+deviceName+"'")
}

// disk returns a copy of the named disk, for the test's checks.
func (c *gceCloud) disk(name string) (gceDisk, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.disks[name]
	if !ok {
		return gceDisk{}, false
	}
	return *d, true
}

// gceError writes the error body the Compute API answers with, which the driver's client
// (googleapi) turns into an error whose reason ("notFound", "alreadyExists") it tests.
func gceError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{ //nolint:errcheck // the client may be gone
		"code": code, "message": msg, "errors": []map[string]string{{"domain": "global", "reason": reason, "message": msg}},
	}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client may be gone
}
