package scheduler

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// csiNode runs plugin hp on a node in a zone (and more segments when given).
func csiNode(name string, p v4.CSIPlugin) *v4.Node {
	n := node(name)
	if p.Name == "" {
		p.Name = "hp"
	}
	n.Status.CSIPlugins = []v4.CSIPlugin{p}
	return n
}

func hp(zone string) v4.CSIPlugin {
	return v4.CSIPlugin{Name: "hp", Node: true, Healthy: true, Topology: map[string]string{"zone": zone}}
}

// vol is an Available volume of plugin hp in webApp's namespace.
func vol(name, mode string, claims ...v4.VolumeClaim) *v4.CSIVolume {
	v := &v4.CSIVolume{Metadata: v4.ObjectMeta{Namespace: webApp.Namespace, Name: name}}
	v.Spec.Plugin, v.Spec.AccessMode = "hp", mode
	v.Status.Phase, v.Status.Claims = v4.VolumeAvailable, claims
	return v
}

func claim(tgName, nodeName, mode string) v4.VolumeClaim {
	return v4.VolumeClaim{TaskGroup: tgName, Node: nodeName, Mode: mode}
}

func zones(zs ...map[string]string) []v4.VolumeTopology {
	out := make([]v4.VolumeTopology, len(zs))
	for i, z := range zs {
		out[i].Segments = z
	}
	return out
}

func csiVolume(name string, readOnly bool) v4.PodVolume {
	return v4.PodVolume{Name: "pv-" + name, CSI: &v4.CSIVolumeSource{Volume: name, ReadOnly: readOnly}}
}

// csiSnapshot holds nodes n1, n2 (zone a) and n3 (zone b) with plugin hp, and vols.
func csiSnapshot(vols []*v4.CSIVolume, tgs ...*v4.TaskGroup) *Snapshot {
	s := snapshotOf([]*v4.Node{csiNode("n1", hp("a")), csiNode("n2", hp("a")), csiNode("n3", hp("b"))}, tgs...)
	for _, v := range vols {
		s.SetVolume(v)
	}
	return s
}

// claimingTG is a task group of another application on a node whose pod claims vol.
func claimingTG(name, nodeName, status, volume string, readOnly bool) *v4.TaskGroup {
	t := tg(AppKey{Kind: v4.KindApplication, Namespace: webApp.Namespace, Name: name}, 0, nodeName, status, nil, nil)
	t.Spec.Template.Spec.Volumes = []v4.PodVolume{csiVolume(volume, readOnly)}
	return t
}

// Each way a node can fail the volume check, named in its words, and each access mode
// against recorded claims and task groups already placed.
func TestCSIFeasibility(t *testing.T) {
	pending := vol("data", "")
	pending.Status.Phase = v4.VolumePending
	zoned := vol("data", "")
	zoned.Status.Topology = zones(map[string]string{"zone": "a"})
	twoSeg := vol("data", "")
	twoSeg.Status.Topology = zones(map[string]string{"zone": "a", "rack": "r1"}, map[string]string{"zone": "b"})
	other := vol("other", v4.AccessMultiNodeMultiWriter, claim("x", "n1", "write"))
	noPlugin := "volume data: the node has no healthy node plugin hp"
	tests := []struct {
		name  string
		vols  []*v4.CSIVolume
		tgs   []*v4.TaskGroup
		nodes []*v4.Node // replace the default nodes when set
		ro    bool
		want  []string
		why   map[string]string // first failure of the others
	}{
		{name: "no volume", want: nil, why: map[string]string{"n1": "volume data: no such volume"}},
		{name: "pending", vols: []*v4.CSIVolume{pending}, why: map[string]string{"n2": "volume data: Pending, not Available"}},
		{name: "any node", vols: []*v4.CSIVolume{vol("data", "")}, want: []string{"n1", "n2", "n3"}},
		{name: "no plugin, unhealthy, no node service",
			nodes: []*v4.Node{node("n1"), csiNode("n2", v4.CSIPlugin{Node: true}), csiNode("n3", v4.CSIPlugin{Healthy: true}), csiNode("n4", hp("a"))},
			vols:  []*v4.CSIVolume{vol("data", "")}, want: []string{"n4"},
			why: map[string]string{"n1": noPlugin, "n2": noPlugin, "n3": noPlugin}},
		{name: "another plugin", nodes: []*v4.Node{csiNode("n1", v4.CSIPlugin{Name: "other", Node: true, Healthy: true})},
			vols: []*v4.CSIVolume{vol("data", "")}, why: map[string]string{"n1": noPlugin}},
		{name: "topology", vols: []*v4.CSIVolume{zoned}, want: []string{"n1", "n2"},
			why: map[string]string{"n3": "volume data: not accessible from the node's topology"}},
		{name: "topology, every segment",
			nodes: []*v4.Node{csiNode("n1", hp("a")), csiNode("n2", v4.CSIPlugin{Node: true, Healthy: true, Topology: map[string]string{"zone": "a", "rack": "r1"}}), csiNode("n3", hp("b"))},
			vols:  []*v4.CSIVolume{twoSeg}, want: []string{"n2", "n3"},
			why: map[string]string{"n1": "volume data: not accessible from the node's topology"}},
		{name: "max volumes", vols: []*v4.CSIVolume{vol("data", ""), other},
			nodes: []*v4.Node{csiNode("n1", v4.CSIPlugin{Node: true, Healthy: true, MaxVolumes: 1}), csiNode("n2", v4.CSIPlugin{Node: true, Healthy: true, MaxVolumes: 1})},
			want:  []string{"n2"}, why: map[string]string{"n1": "volume data: plugin hp has 1 of its 1 volumes on the node"}},
		{name: "max volumes, already there", vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeMultiWriter, claim("y", "n1", "write"))},
			nodes: []*v4.Node{csiNode("n1", v4.CSIPlugin{Node: true, Healthy: true, MaxVolumes: 1})}, want: []string{"n1"}},
		{name: "single-node-writer claimed", vols: []*v4.CSIVolume{vol("data", "", claim("x", "n1", "write"))}, want: []string{"n1"},
			why: map[string]string{"n2": "volume data: single-node-writer, claimed on n1"}},
		{name: "single-node-reader-only claimed", ro: true, vols: []*v4.CSIVolume{vol("data", v4.AccessSingleNodeReader, claim("x", "n3", "read"))},
			want: []string{"n3"}, why: map[string]string{"n1": "volume data: single-node-reader-only, claimed on n3"}},
		{name: "single-node by a placed task group", vols: []*v4.CSIVolume{vol("data", "")},
			tgs: []*v4.TaskGroup{claimingTG("db", "n2", v4.StatusStaging, "data", false)}, want: []string{"n2"},
			why: map[string]string{"n3": "volume data: single-node-writer, claimed on n2"}},
		{name: "an ended task group claims nothing", vols: []*v4.CSIVolume{vol("data", "")},
			tgs: []*v4.TaskGroup{claimingTG("db", "n2", v4.StatusFinish, "data", false)}, want: []string{"n1", "n2", "n3"}},
		{name: "reader-only refuses writers", vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeReader)},
			why: map[string]string{"n1": "volume data: multi-node-reader-only, a write claim"}},
		{name: "reader-only takes readers", ro: true, vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeReader, claim("x", "n1", "read"))},
			want: []string{"n1", "n2", "n3"}},
		{name: "single writer taken", vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeSingleWriter, claim("x", "n2", "write"), claim("r", "n1", "read"))},
			why: map[string]string{"n1": "volume data: multi-node-single-writer, written from n2"}},
		{name: "single writer, a reader", ro: true, vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeSingleWriter, claim("x", "n2", "write"))},
			want: []string{"n1", "n2", "n3"}},
		{name: "single writer, readers only", vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeSingleWriter, claim("x", "n2", "read"))},
			want: []string{"n1", "n2", "n3"}},
		{name: "multi writer", vols: []*v4.CSIVolume{vol("data", v4.AccessMultiNodeMultiWriter, claim("x", "n2", "write"), claim("z", "n3", "write"))},
			want: []string{"n1", "n2", "n3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := csiSnapshot(tt.vols, tt.tgs...)
			if tt.nodes != nil {
				s = snapshotOf(tt.nodes, tt.tgs...)
				for _, v := range tt.vols {
					s.SetVolume(v)
				}
			}
			req := request(webApp, nil, 1)
			req.Volumes = []v4.PodVolume{csiVolume("data", tt.ro)}
			assertNodes(t, feasible(s, req), tt.want)
			st := s.compile(req, Options{})
			for name, want := range tt.why {
				if got := st.firstFailure(s.byName[name]); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
				if CheckKind(want) != CheckVolume {
					t.Errorf("%q is not a volume check", want)
				}
			}
		})
	}
}

// Placements of the same pass claim too: a single-node volume keeps every instance on
// the first one's node, a single writer places one instance, and MaxVolumes counts the
// volumes placed by earlier requests.
func TestCSISamePass(t *testing.T) {
	nodesOf := func(res Result) []string {
		var out []string
		for _, p := range res.Placements {
			out = append(out, p.Node)
		}
		return out
	}
	s := csiSnapshot([]*v4.CSIVolume{vol("data", "")})
	req := request(webApp, nil, 3)
	req.Volumes = []v4.PodVolume{csiVolume("data", false)}
	res := s.Place(req, Options{})
	if got := nodesOf(res); len(got) != 3 || got[0] != got[1] || got[1] != got[2] {
		t.Errorf("single-node-writer instances on %v", got)
	}

	s = csiSnapshot([]*v4.CSIVolume{vol("data", v4.AccessMultiNodeSingleWriter)})
	res = s.Place(req, Options{})
	if len(res.Placements) != 1 || !slices.Equal(res.Unplaced, []int{1, 2}) {
		t.Fatalf("single writer: %+v", res)
	}
	want := "3 nodes: 3 volume data: multi-node-single-writer, written from " + res.Placements[0].Node
	if got := res.Reason.String(); got != want || res.Reason.Main() != CheckVolume {
		t.Errorf("reason %q (%s), want %q", got, res.Reason.Main(), want)
	}

	s = csiSnapshot([]*v4.CSIVolume{vol("data", v4.AccessMultiNodeMultiWriter)})
	if got := nodesOf(s.Place(req, Options{})); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("multi writer spread over %v", got)
	}

	// One node whose plugin takes one volume: the second request's volume cannot go.
	s = snapshotOf([]*v4.Node{csiNode("n1", v4.CSIPlugin{Node: true, Healthy: true, MaxVolumes: 1})})
	s.SetVolume(vol("a", v4.AccessMultiNodeMultiWriter))
	s.SetVolume(vol("b", v4.AccessMultiNodeMultiWriter))
	ra := request(webApp, nil, 2)
	ra.Volumes = []v4.PodVolume{csiVolume("a", false)}
	rb := request(AppKey{Kind: v4.KindApplication, Namespace: webApp.Namespace, Name: "other"}, nil, 1)
	rb.Volumes = []v4.PodVolume{csiVolume("b", false)}
	out := s.PlaceAll([]*Request{ra, rb}, Options{})
	if len(out[0].Placements) != 2 || len(out[1].Placements) != 0 ||
		out[1].Reason.String() != "1 node: 1 volume b: plugin hp has 1 of its 1 volumes on the node" {
		t.Errorf("max volumes across requests: %+v / %+v", out[0], out[1])
	}
	// Two volumes of one request count together.
	s = snapshotOf([]*v4.Node{csiNode("n1", v4.CSIPlugin{Node: true, Healthy: true, MaxVolumes: 1})})
	s.SetVolume(vol("a", ""))
	s.SetVolume(vol("b", ""))
	ra.Volumes = []v4.PodVolume{csiVolume("a", false), csiVolume("b", false)}
	if res := s.Place(ra, Options{}); len(res.Placements) != 0 {
		t.Errorf("two volumes on a plugin of one: %+v", res)
	}
}
