package scheduler

import (
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// The volume check (docs/scheduling.md, docs/volumes.md "Scheduling"): a pod that claims
// CSI volumes (csi pod volumes) goes only to a node where each volume object exists and
// is Available, the node runs a healthy node plugin of the volume's plugin whose
// topology is among the volume's, the plugin's MaxVolumes leaves room, and the volume's
// access mode admits one more claim there. A request without csi volumes skips it at the
// cost of one length test.
//
// The first three depend on the node and the volume alone (static: staticCandidates);
// the last two on the claims, which placements of the same pass add to (dynamic:
// fitsNow). Claims only ever make nodes fail, so the heap's one-way pruning holds.

// csiAsk is one volume a request's pod claims.
type csiAsk struct {
	name string // the volume object's name, for the reasons
	tgVolume
}

func csiAsks(req *Request) []csiAsk {
	if len(req.Volumes) == 0 {
		return nil
	}
	vols := volumesOf(req.App.Namespace, req.Volumes)
	out := make([]csiAsk, len(vols))
	for i, v := range vols {
		out[i] = csiAsk{name: v.key[len(req.App.Namespace)+1:], tgVolume: v}
	}
	return out
}

// placedVolumes are what a task group placed for st claims.
func (st *reqState) placedVolumes() []tgVolume {
	if len(st.csi) == 0 {
		return nil
	}
	out := make([]tgVolume, len(st.csi))
	for i, a := range st.csi {
		out[i] = a.tgVolume
	}
	return out
}

// volumesReady says why a volume the request claims cannot be used on any node: it does
// not exist or is not Available ("" when all can).
func (st *reqState) volumesReady() string {
	for _, a := range st.csi {
		vs := st.s.volumes[a.key]
		switch {
		case vs == nil || !vs.exists:
			return "volume " + a.name + ": no such volume"
		case vs.phase != v4.VolumeAvailable:
			phase := vs.phase
			if phase == "" {
				phase = v4.VolumePending
			}
			return "volume " + a.name + ": " + phase + ", not Available"
		case a.write && (vs.mode == v4.AccessSingleNodeReader || vs.mode == v4.AccessMultiNodeReader):
			return "volume " + a.name + ": " + vs.mode + ", a write claim"
		}
	}
	return ""
}

// volumesReachable says why n cannot reach a volume the request claims: no healthy node
// plugin of its plugin, or a topology the volume is not accessible from. Volumes that
// are not ready are volumesReady's to report.
func (st *reqState) volumesReachable(n *nodeState) string {
	for _, a := range st.csi {
		vs := st.s.volumes[a.key]
		if vs == nil || !vs.exists {
			continue
		}
		p := n.csi[vs.plugin]
		if p == nil || !p.Healthy || !p.Node {
			return "volume " + a.name + ": the node has no healthy node plugin " + vs.plugin
		}
		if !topologyMatches(vs.topology, p.Topology) {
			return "volume " + a.name + ": not accessible from the node's topology"
		}
	}
	return ""
}

// volumesStatic is the static part of the check.
func (st *reqState) volumesStatic(n *nodeState) string {
	if len(st.csi) == 0 {
		return ""
	}
	if why := st.volumesReady(); why != "" {
		return why
	}
	return st.volumesReachable(n)
}

// topologyMatches: a volume without topology is accessible from every node; otherwise
// one of its entries must have every segment equal in the node's topology.
func topologyMatches(vol []v4.VolumeTopology, node map[string]string) bool {
	if len(vol) == 0 {
		return true
	}
	for _, t := range vol {
		ok := true
		for k, v := range t.Segments {
			if got, has := node[k]; !has || got != v {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// volumesClaimable is the dynamic part: the access modes and MaxVolumes given the
// claims recorded on the volumes and those of task groups placed so far. It assumes
// volumesStatic passed on n.
func (st *reqState) volumesClaimable(n *nodeState) string {
	if len(st.csi) == 0 {
		return ""
	}
	added := map[string]int(nil) // volumes new to n, by plugin, from this request
	for _, a := range st.csi {
		vs := st.s.volumes[a.key]
		if vs == nil {
			return "volume " + a.name + ": no such volume" // volumesStatic's to report first
		}
		if why := accessFailure(vs, a.write, n.name); why != "" {
			return "volume " + a.name + ": " + why
		}
		if vs.on[n.name] > 0 {
			continue // published there already: no new volume for the plugin
		}
		p := n.csi[vs.plugin]
		if p == nil || p.MaxVolumes <= 0 {
			continue
		}
		used := st.s.csiUse[n.name][vs.plugin] + added[vs.plugin]
		if int64(used) >= p.MaxVolumes {
			return "volume " + a.name + ": plugin " + vs.plugin + " has " + strconv.Itoa(used) + " of its " +
				strconv.FormatInt(p.MaxVolumes, 10) + " volumes on the node"
		}
		if added == nil {
			added = map[string]int{}
		}
		added[vs.plugin]++
	}
	return ""
}

// accessFailure says why the access mode of vs refuses one more claim (write or not) on
// node ("" when it admits it). Reader-only modes refuse writers in volumesReady.
func accessFailure(vs *volumeState, write bool, node string) string {
	var why string
	switch vs.mode {
	case v4.AccessSingleNodeReader, v4.AccessSingleNodeWriter:
		vs.eachClaim(func(c volClaim) bool {
			if c.node != node {
				why = vs.mode + ", claimed on " + c.node
			}
			return why == ""
		})
	case v4.AccessMultiNodeSingleWriter:
		if !write {
			return ""
		}
		vs.eachClaim(func(c volClaim) bool {
			if c.write {
				why = vs.mode + ", written from " + c.node
			}
			return why == ""
		})
	}
	return why
}
