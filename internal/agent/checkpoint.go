package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
)

// The checkpoint is the agent's local memory of what it runs, so that after a restart it
// can clean up after task groups deleted while it was down (their grace period and pod
// directory), even when their processes are already gone. It is rewritten after every
// change with write-to-temp + fsync + rename (+ fsync of the directory), so a crash leaves
// either the old or the new file, never a torn one.

// checkpointVersion is the file format; a file of another version is ignored (and
// replaced), which only costs the cleanup of what it listed.
const checkpointVersion = 1

// checkpointData is the file's content.
type checkpointData struct {
	Version int    `json:"version"`
	Node    string `json:"node"`
	// Cluster is the ID of the cluster whose task groups these are (ownership.go);
	// empty in a file of an agent that did not record it.
	Cluster    string                      `json:"cluster,omitempty"`
	TaskGroups map[string]*checkpointEntry `json:"taskGroups"` // by namespace/name
	// ProxyTable is the service proxy's table (netsvc.ClusterTable); empty in the file
	// of an agent from before tables were named by cluster, whose table was "berth".
	ProxyTable string `json:"proxyTable,omitempty"`
}

// checkpointEntry is one task group the agent runs, and what it holds on the node.
type checkpointEntry struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// KillGracePeriod (seconds) stops its tasks if it is gone after a restart.
	KillGracePeriod int                `json:"killGracePeriod,omitempty"`
	Ports           []v4.AllocatedPort `json:"ports,omitempty"`
	PodDir          string             `json:"podDir"`
	Since           time.Time          `json:"since"`
	// GPUs are the cards its tasks hold, GPUSharing the mode their shares were started
	// in: a restarted agent serves their vcuda sockets again, and removes their files.
	GPUs       []v4.TaskGPU `json:"gpus,omitempty"`
	GPUSharing string       `json:"gpuSharing,omitempty"`
	// Devices are the device plugins' devices its tasks hold: task ID -> resource -> IDs.
	Devices map[string]map[string][]string `json:"devices,omitempty"`
	// Revocable, Resources and Priority are the task group's tier, reservation and
	// priority: the revocable tier's evictions weigh them (revocable.go).
	Revocable bool             `json:"revocable,omitempty"`
	Resources v4.NodeResources `json:"resources,omitzero"`
	Priority  int              `json:"priority,omitempty"`
}

// checkpoint is the file and its content in memory. Its methods are safe for concurrent use.
type checkpoint struct {
	path string
	mu   sync.Mutex
	data checkpointData
	// existed: the file was there at the start (an agent ran on this data dir before).
	existed bool
}

// loadCheckpoint reads the file at path; a missing file is an empty checkpoint. A file
// that cannot be decoded is an error: silently dropping it could leave workloads running
// that nobody stops.
func loadCheckpoint(path, node string) (*checkpoint, error) {
	c := &checkpoint{path: path, data: checkpointData{Version: checkpointVersion, Node: node, TaskGroups: map[string]*checkpointEntry{}}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	var d checkpointData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w (move it away to start from the running tasks alone)", path, err)
	}
	c.existed = true
	if d.Version == checkpointVersion && d.TaskGroups != nil {
		c.data.TaskGroups, c.data.Cluster, c.data.ProxyTable = d.TaskGroups, d.Cluster, d.ProxyTable
	}
	return c, nil
}

// claimProxyTable records table as the node's service proxy table, and reports whether
// an agent from before tables were named by cluster ran on this data dir: the table
// "berth" on the machine is then the one it wrote.
func (c *checkpoint) claimProxyTable(table string) (older bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data.ProxyTable == table {
		return false, nil
	}
	older = c.existed && c.data.ProxyTable == ""
	c.data.ProxyTable = table
	return older, c.saveLocked()
}

// put records a task group the agent runs.
func (c *checkpoint) put(tg *v4.TaskGroup, podDir, sharing string) error {
	key := tgKey(tg.Metadata.Namespace, tg.Metadata.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data.TaskGroups[key]; ok {
		return nil
	}
	c.data.TaskGroups[key] = &checkpointEntry{
		Namespace: tg.Metadata.Namespace, Name: tg.Metadata.Name,
		KillGracePeriod: tg.Spec.KillGracePeriod, Ports: tg.Spec.Ports,
		PodDir: podDir, Since: time.Now().UTC(),
		GPUs: tg.Spec.GPUs, Revocable: tg.Spec.Revocable, Resources: tg.Spec.Resources, Priority: tg.Spec.Priority,
	}
	if len(tg.Spec.GPUs) > 0 {
		c.data.TaskGroups[key].GPUSharing = sharing
	}
	return c.saveLocked()
}

// setDevices records the device plugins' devices a task of the task group holds.
func (c *checkpoint) setDevices(key, task string, held map[string][]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.data.TaskGroups[key]
	if e == nil {
		return nil
	}
	if e.Devices == nil {
		e.Devices = map[string]map[string][]string{}
	}
	e.Devices[task] = held
	return c.saveLocked()
}

// remove forgets a task group once its tasks and directory are gone.
func (c *checkpoint) remove(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data.TaskGroups[key]; !ok {
		return nil
	}
	delete(c.data.TaskGroups, key)
	return c.saveLocked()
}

// get returns a copy of one entry.
func (c *checkpoint) get(key string) (checkpointEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.data.TaskGroups[key]
	if !ok {
		return checkpointEntry{}, false
	}
	return *e, true
}

// keys returns the task groups recorded, sorted.
func (c *checkpoint) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.data.TaskGroups))
}

// save writes the file now (after a load, so the file exists from the start).
func (c *checkpoint) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.saveLocked()
}

func (c *checkpoint) saveLocked() error {
	b, err := json.MarshalIndent(c.data, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	return atomicfile.Write(c.path, append(b, '\n'), 0o600)
}

func tgKey(ns, name string) string { return ns + "/" + name }
