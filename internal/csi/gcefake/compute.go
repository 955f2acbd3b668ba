package gcefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// serveCompute answers /compute/{v1,beta,alpha}/projects/P/zones/Z/... for the one
// project and zone, with the bearer token the metadata server handed out.
func (c *Cloud) serveCompute(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+token {
		apiError(w, http.StatusUnauthorized, "authError", "no valid bearer token")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 5 || parts[0] != "compute" || parts[2] != "projects" || parts[4] != "zones" {
		c.unserve(w, r)
		return
	}
	if parts[3] != Project {
		apiError(w, http.StatusNotFound, "notFound", "The resource 'projects/"+parts[3]+"' was not found")
		return
	}
	if len(parts) == 5 && r.Method == http.MethodGet { // the region's zones: just the one
		writeJSON(w, map[string]any{"kind": "compute#zoneList", "items": []map[string]any{
			{"kind": "compute#zone", "name": Zone, "region": "us-test1", "status": "UP"}}})
		return
	}
	if len(parts) < 7 || parts[5] != Zone {
		apiError(w, http.StatusNotFound, "notFound", "The resource '"+strings.Join(parts[2:], "/")+"' was not found")
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
	case len(rest) >= 2 && rest[0] == "instances" && rest[1] != Instance:
		apiError(w, http.StatusNotFound, "notFound", "The resource 'instances/"+rest[1]+"' was not found")
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

func (c *Cloud) zoneURL() string {
	return c.compute.URL + "/compute/v1/projects/" + Project + "/zones/" + Zone
}

func (c *Cloud) diskJSON(d *disk) map[string]any {
	disk := map[string]any{
		"kind": "compute#disk", "name": d.name, "sizeGb": strconv.FormatInt(d.sizeGB, 10),
		"type": d.diskType, "status": "READY", "zone": c.zoneURL(),
		"selfLink": c.zoneURL() + "/disks/" + d.name,
	}
	if d.attached != nil {
		disk["users"] = []string{c.zoneURL() + "/instances/" + Instance}
	}
	return disk
}

func (c *Cloud) instance() map[string]any {
	disks := []map[string]any{}
	for _, d := range c.disks {
		if d.attached != nil {
			disks = append(disks, map[string]any{"kind": "compute#attachedDisk", "type": "PERSISTENT",
				"deviceName": d.attached.deviceName, "mode": d.attached.mode, "source": c.zoneURL() + "/disks/" + d.name})
		}
	}
	return map[string]any{
		"kind": "compute#instance", "name": Instance, "id": "4242", "status": "RUNNING", "zone": c.zoneURL(),
		"machineType": c.zoneURL() + "/machineTypes/" + MachineType, "disks": disks,
		"selfLink": c.zoneURL() + "/instances/" + Instance,
	}
}

// operation answers a call that changed something with an operation already DONE.
func (c *Cloud) operation(w http.ResponseWriter, kind, target string) {
	c.ops++
	writeJSON(w, map[string]any{"kind": "compute#operation", "name": "operation-" + strconv.Itoa(c.ops),
		"operationType": kind, "targetLink": target, "status": "DONE", "progress": 100, "zone": c.zoneURL()})
}

func (c *Cloud) getOperation(w http.ResponseWriter, name string) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "operation-"))
	if err != nil || n < 1 || n > c.ops {
		apiError(w, http.StatusNotFound, "notFound", "The resource 'operations/"+name+"' was not found")
		return
	}
	writeJSON(w, map[string]any{"kind": "compute#operation", "name": name, "status": "DONE", "progress": 100, "zone": c.zoneURL()})
}

func (c *Cloud) insertDisk(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string `json:"name"`
		SizeGB int64  `json:"sizeGb,string"`
		Type   string `json:"type"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "parseError", err.Error())
		return
	}
	switch {
	case !nameRE.MatchString(req.Name):
		apiError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for field 'resource.name': '%s'", req.Name))
		return
	case req.SizeGB < 1 || req.SizeGB > maxDiskGB:
		apiError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for field 'resource.sizeGb': '%d'. Disk size cannot be larger than 64 TB.", req.SizeGB))
		return
	case c.disks[req.Name] != nil:
		apiError(w, http.StatusConflict, "alreadyExists", "The resource 'disks/"+req.Name+"' already exists")
		return
	}
	d := &disk{name: req.Name, sizeGB: req.SizeGB, diskType: req.Type, file: filepath.Join(c.dir, req.Name)}
	f, err := os.Create(d.file)
	if err == nil {
		err = f.Truncate(req.SizeGB << 30) // sparse: only what the file system writes takes room
		f.Close()
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, "backendError", err.Error())
		return
	}
	c.disks[d.name] = d
	c.operation(w, "insert", c.zoneURL()+"/disks/"+d.name)
}

func (c *Cloud) getDisk(w http.ResponseWriter, name string) {
	d := c.disks[name]
	if d == nil {
		apiError(w, http.StatusNotFound, "notFound", "The resource 'disks/"+name+"' was not found")
		return
	}
	writeJSON(w, c.diskJSON(d))
}

func (c *Cloud) deleteDisk(w http.ResponseWriter, name string) {
	d := c.disks[name]
	switch {
	case d == nil:
		apiError(w, http.StatusNotFound, "notFound", "The resource 'disks/"+name+"' was not found")
		return
	case d.attached != nil:
		apiError(w, http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The disk resource 'disks/"+name+"' is already being used by 'instances/"+Instance+"'")
		return
	}
	if err := os.Remove(d.file); err != nil {
		apiError(w, http.StatusInternalServerError, "backendError", err.Error())
		return
	}
	delete(c.disks, name)
	c.operation(w, "delete", c.zoneURL()+"/disks/"+name)
}

func (c *Cloud) attachDisk(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceName string `json:"deviceName"`
		Source     string `json:"source"`
		Mode       string `json:"mode"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "parseError", err.Error())
		return
	}
	wantSource := "projects/" + Project + "/zones/" + Zone + "/disks/"
	i := strings.Index(req.Source, wantSource)
	if i < 0 {
		apiError(w, http.StatusBadRequest, "invalid", "Invalid value for field 'resource.source': '"+req.Source+"'")
		return
	}
	d := c.disks[req.Source[i+len(wantSource):]]
	if d == nil {
		apiError(w, http.StatusNotFound, "notFound", "The resource '"+req.Source+"' was not found")
		return
	}
	if d.attached != nil {
		apiError(w, http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The disk resource '"+req.Source+"' is already being used by 'instances/"+Instance+"'")
		return
	}
	if req.Mode == "" {
		req.Mode = "READ_WRITE"
	}
	a, err := attachDevice(c.t, d.file, req.DeviceName, req.Mode)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("attach disk %s: %v", d.name, err))
		return
	}
	d.attached = a
	c.operation(w, "attachDisk", c.zoneURL()+"/instances/"+Instance)
}

func (c *Cloud) detachDisk(w http.ResponseWriter, deviceName string) {
	for _, d := range c.disks {
		if d.attached != nil && d.attached.deviceName == deviceName {
			if err := d.attached.detach(); err != nil {
				apiError(w, http.StatusInternalServerError, "backendError", err.Error())
				return
			}
			d.attached = nil
			c.operation(w, "detachDisk", c.zoneURL()+"/instances/"+Instance)
			return
		}
	}
	apiError(w, http.StatusBadRequest, "invalid", "No attached disk found with device name '"+deviceName+"'")
}

// apiError writes the error body the Compute API answers with, which the driver's client
// (googleapi) turns into an error whose reason ("notFound", "alreadyExists") it tests.
func apiError(w http.ResponseWriter, code int, reason, msg string) {
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
