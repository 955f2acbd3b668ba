package scheduler

import (
	"maps"

	v4 "github.com/berthhq/berth/api/v4"
)

// The snapshot's CSI volumes (docs/volumes.md, "Scheduling"): the volume objects the
// feed reads from the cache, and who claims each. A claim is either recorded on the
// volume (status.claims, written by the server when the agent claims it) or implied by
// a task group in the snapshot whose pod names the volume and which still holds its node
// (placed in this pass, or placed earlier and not yet started): both count, a task group
// in both once. A snapshot without volumes and task groups without csi volumes allocate
// nothing here.

// volumeState is one volume object (exists) and the claims on it. It outlives its
// object while task groups still claim it, so a volume recreated under the same name
// finds them.
type volumeState struct {
	exists         bool
	plugin, mode   string
	phase          string
	topology       []v4.VolumeTopology // never written: shared by clones
	status, placed map[string]volClaim // by task group key, namespace/name
	// on counts the claims on each node, and onPlugin is the plugin the nodes are
	// counted under in Snapshot.csiUse ("" while the object is missing), so the count
	// can be taken back exactly.
	on       map[string]int
	onPlugin string
}

// volClaim is one task group's claim of a volume on a node.
type volClaim struct {
	node  string
	write bool
}

// tgVolume is a volume a task group's pod claims.
type tgVolume struct {
	key   string // namespace/name of the volume object
	write bool
}

// SetVolume adds or replaces a volume object.
func (s *Snapshot) SetVolume(v *v4.CSIVolume) {
	key := v.Metadata.Namespace + "/" + v.Metadata.Name
	vs := s.volume(key)
	vs.exists = true
	vs.plugin, vs.phase, vs.topology = v.Spec.Plugin, v.Status.Phase, v.Status.Topology
	vs.mode = v.Spec.AccessMode
	if vs.mode == "" {
		vs.mode = v4.AccessSingleNodeWriter
	}
	vs.status = nil
	for _, c := range v.Status.Claims {
		if vs.status == nil {
			vs.status = make(map[string]volClaim, len(v.Status.Claims))
		}
		vs.status[v.Metadata.Namespace+"/"+c.TaskGroup] = volClaim{node: c.Node, write: c.Mode == "write"}
	}
	s.recount(key, vs)
}

// RemoveVolume forgets a volume object; task groups that claim it keep their claims.
func (s *Snapshot) RemoveVolume(namespace, name string) {
	key := namespace + "/" + name
	if vs := s.volumes[key]; vs != nil {
		vs.exists, vs.status = false, nil
		s.recount(key, vs)
	}
}

func (s *Snapshot) volume(key string) *volumeState {
	if s.volumes == nil {
		s.volumes = map[string]*volumeState{}
	}
	vs := s.volumes[key]
	if vs == nil {
		vs = &volumeState{}
		s.volumes[key] = vs
	}
	return vs
}

// accountVolumes adds (sign +1) or removes (-1) the claims of a task group that holds
// its node. Each claim moves the counts by itself, so placing many instances that claim
// one volume costs the same per instance.
func (s *Snapshot) accountVolumes(p *placedTG, sign int) {
	for _, v := range p.volumes {
		vs := s.volume(v.key)
		recorded, hasRecorded := vs.status[p.key]
		if sign > 0 {
			if vs.placed == nil {
				vs.placed = map[string]volClaim{}
			}
			if hasRecorded { // the placement stands for the recorded claim
				s.countClaim(vs, recorded.node, -1)
			}
			vs.placed[p.key] = volClaim{node: p.node, write: v.write}
			s.countClaim(vs, p.node, +1)
			continue
		}
		if old, ok := vs.placed[p.key]; ok {
			delete(vs.placed, p.key)
			s.countClaim(vs, old.node, -1)
			if hasRecorded {
				s.countClaim(vs, recorded.node, +1)
			}
		}
		if !vs.exists && len(vs.placed) == 0 {
			delete(s.volumes, v.key)
		}
	}
}

// eachClaim calls fn for every claim of vs: a task group's own placement first, then
// the recorded claims of task groups the snapshot does not place.
func (vs *volumeState) eachClaim(fn func(c volClaim) bool) {
	for _, c := range vs.placed {
		if !fn(c) {
			return
		}
	}
	for tg, c := range vs.status {
		if _, dup := vs.placed[tg]; !dup && !fn(c) {
			return
		}
	}
}

// countClaim moves one claim on node in vs.on, and in csiUse (the volumes of each
// plugin with a claim on each node, which MaxVolumes bounds) when the node gains its
// first claim of vs or loses its last.
func (s *Snapshot) countClaim(vs *volumeState, node string, sign int) {
	if sign < 0 && vs.on[node] <= 0 {
		return // nothing counted there: a removal never takes back more than was added
	}
	if vs.on == nil {
		vs.on = map[string]int{}
	}
	vs.on[node] += sign
	switch n := vs.on[node]; {
	case n <= 0:
		delete(vs.on, node)
		s.use(node, vs.onPlugin, -1)
	case n == 1 && sign > 0:
		s.use(node, vs.onPlugin, +1)
	}
}

// use counts a volume of plugin on node; a volume without its object ("" plugin) is
// usable nowhere and counts for no plugin.
func (s *Snapshot) use(node, plugin string, sign int) {
	if plugin == "" {
		return
	}
	if s.csiUse == nil {
		s.csiUse = map[string]map[string]int{}
	}
	if s.csiUse[node] == nil {
		s.csiUse[node] = map[string]int{}
	}
	s.csiUse[node][plugin] += sign
	if s.csiUse[node][plugin] <= 0 {
		delete(s.csiUse[node], plugin)
		if len(s.csiUse[node]) == 0 {
			delete(s.csiUse, node)
		}
	}
}

// recount counts vs's claims afresh after its object changed (its plugin or recorded
// claims), and drops vs once nothing refers to it.
func (s *Snapshot) recount(key string, vs *volumeState) {
	for n := range vs.on {
		s.use(n, vs.onPlugin, -1)
	}
	vs.on, vs.onPlugin = nil, ""
	if !vs.exists && len(vs.placed) == 0 {
		delete(s.volumes, key)
		return
	}
	if vs.exists {
		vs.onPlugin = vs.plugin
	}
	vs.eachClaim(func(c volClaim) bool {
		s.countClaim(vs, c.node, +1)
		return true
	})
}

// volumesOf lists the volume objects a pod claims, each once (written when any of its
// pod volumes writes).
func volumesOf(namespace string, vols []v4.PodVolume) []tgVolume {
	var out []tgVolume
	for _, pv := range vols {
		if pv.CSI == nil {
			continue
		}
		key, dup := namespace+"/"+pv.CSI.Volume, false
		for i := range out {
			if out[i].key == key {
				out[i].write, dup = out[i].write || !pv.CSI.ReadOnly, true
			}
		}
		if !dup {
			out = append(out, tgVolume{key: key, write: !pv.CSI.ReadOnly})
		}
	}
	return out
}

// cloneVolumes copies the volumes and their counts into c.
func (s *Snapshot) cloneVolumes(c *Snapshot) {
	if len(s.volumes) > 0 {
		c.volumes = make(map[string]*volumeState, len(s.volumes))
		for key, vs := range s.volumes {
			cp := *vs
			cp.status, cp.placed, cp.on = maps.Clone(vs.status), maps.Clone(vs.placed), maps.Clone(vs.on)
			c.volumes[key] = &cp
		}
	}
	if len(s.csiUse) > 0 {
		c.csiUse = make(map[string]map[string]int, len(s.csiUse))
		for n, byPlugin := range s.csiUse {
			c.csiUse[n] = maps.Clone(byPlugin)
		}
	}
}

// setPlugins keeps the node's CSI plugins by name; the map is replaced, never written,
// so clones share it.
func (ns *nodeState) setPlugins(plugins []v4.CSIPlugin) {
	ns.csi = nil
	for i := range plugins {
		if ns.csi == nil {
			ns.csi = make(map[string]*v4.CSIPlugin, len(plugins))
		}
		p := plugins[i]
		ns.csi[p.Name] = &p
	}
}
