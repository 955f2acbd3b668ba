package volumes

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func volume(mode string, claims ...v4.VolumeClaim) *v4.CSIVolume {
	return &v4.CSIVolume{Metadata: v4.ObjectMeta{Name: "data", Namespace: "shop"},
		Spec: v4.VolumeSpec{Plugin: "p.csi", AccessMode: mode}, Status: v4.VolumeStatus{Phase: v4.VolumeAvailable, Claims: claims}}
}

func claim(tg, node, mode string) v4.VolumeClaim {
	return v4.VolumeClaim{TaskGroup: tg, Node: node, Mode: mode}
}

func TestCheckAccess(t *testing.T) {
	w1, r1 := claim("a", "n1", ModeWrite), claim("a", "n1", ModeRead)
	for _, tc := range []struct {
		name   string
		vol    *v4.CSIVolume
		c      v4.VolumeClaim
		holder string // "" for admitted; "-" for refused without a holder
	}{
		{"single-node-writer, first claim", volume(v4.AccessSingleNodeWriter), w1, ""},
		{"single-node-writer, same node", volume(v4.AccessSingleNodeWriter, w1), claim("b", "n1", ModeWrite), ""},
		{"single-node-writer, other node", volume(v4.AccessSingleNodeWriter, w1), claim("b", "n2", ModeRead), "a"},
		{"single-node-reader, a writer", volume(v4.AccessSingleNodeReader), w1, "-"},
		{"single-node-reader, other node", volume(v4.AccessSingleNodeReader, r1), claim("b", "n2", ModeRead), "a"},
		{"multi-node-reader, readers anywhere", volume(v4.AccessMultiNodeReader, r1), claim("b", "n2", ModeRead), ""},
		{"multi-node-reader, a writer", volume(v4.AccessMultiNodeReader, r1), claim("b", "n2", ModeWrite), "-"},
		{"single writer, a second writer", volume(v4.AccessMultiNodeSingleWriter, w1), claim("b", "n2", ModeWrite), "a"},
		{"single writer, readers beside it", volume(v4.AccessMultiNodeSingleWriter, w1, claim("c", "n3", ModeRead)), claim("b", "n2", ModeRead), ""},
		{"multi writer", volume(v4.AccessMultiNodeMultiWriter, w1), claim("b", "n2", ModeWrite), ""},
		{"the same task group again", volume(v4.AccessMultiNodeSingleWriter, w1), w1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckAccess(tc.vol, tc.c)
			var ce *ConflictError
			switch {
			case tc.holder == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.holder != "" && !errors.As(err, &ce):
				t.Fatalf("admitted (err %v)", err)
			case tc.holder == "-" && ce.Holder.TaskGroup != "", tc.holder != "-" && tc.holder != "" && ce.Holder.TaskGroup != tc.holder:
				t.Fatalf("holder %q, want %q: %v", ce.Holder.TaskGroup, tc.holder, err)
			}
		})
	}
}

func node(name, phase string, plugins ...v4.CSIPlugin) *v4.Node {
	return &v4.Node{Metadata: v4.ObjectMeta{Name: name}, Status: v4.NodeStatus{Phase: phase, CSIPlugins: plugins}}
}

func TestController(t *testing.T) {
	ctl := func(topo map[string]string) v4.CSIPlugin {
		return v4.CSIPlugin{Name: "p.csi", Controller: true, Healthy: true, Topology: topo}
	}
	z1, z2 := map[string]string{"zone": "z1"}, map[string]string{"zone": "z2"}
	vol := volume(v4.AccessSingleNodeWriter)
	vol.Spec.Topology = &v4.VolumeTopologyRequest{Required: []v4.VolumeTopology{{Segments: z2}}}
	for _, tc := range []struct {
		name  string
		nodes []*v4.Node
		want  string
	}{
		{"none", []*v4.Node{node("a", v4.NodeReady)}, ""},
		{"not ready", []*v4.Node{node("a", v4.NodeNotReady, ctl(z2))}, ""},
		{"unhealthy", []*v4.Node{node("a", v4.NodeReady, v4.CSIPlugin{Name: "p.csi", Controller: true})}, ""},
		{"node plugin only", []*v4.Node{node("a", v4.NodeReady, v4.CSIPlugin{Name: "p.csi", Node: true, Healthy: true})}, ""},
		{"another plugin", []*v4.Node{node("a", v4.NodeReady, v4.CSIPlugin{Name: "q.csi", Controller: true, Healthy: true})}, ""},
		{"by name", []*v4.Node{node("b", v4.NodeReady, ctl(z2)), node("a", v4.NodeReady, ctl(z2))}, "a"},
		{"topology first", []*v4.Node{node("a", v4.NodeReady, ctl(z1)), node("b", v4.NodeReady, ctl(z2))}, "b"},
		{"else any", []*v4.Node{node("a", v4.NodeReady, ctl(z1))}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Controller(tc.nodes, vol)
			if got != tc.want || (tc.want == "") != errors.Is(err, ErrNoController) {
				t.Fatalf("got %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestTopologyMatches(t *testing.T) {
	have := map[string]string{"zone": "z1", "rack": "r1"}
	for _, tc := range []struct {
		want []v4.VolumeTopology
		ok   bool
	}{
		{nil, true},
		{[]v4.VolumeTopology{{Segments: map[string]string{"zone": "z1"}}}, true},
		{[]v4.VolumeTopology{{Segments: map[string]string{"zone": "z1", "rack": "r2"}}}, false},
		{[]v4.VolumeTopology{{Segments: map[string]string{"zone": "z2"}}, {Segments: map[string]string{"rack": "r1"}}}, true},
		{[]v4.VolumeTopology{{Segments: map[string]string{"host": "h"}}}, false},
	} {
		if got := TopologyMatches(have, tc.want); got != tc.ok {
			t.Errorf("TopologyMatches(%v) = %t", tc.want, got)
		}
	}
}

// FuzzCheckAccess checks that whatever claims a volume holds (its status is stored JSON
// any writer of etcd may have left), CheckAccess never panics and admits only what its
// access mode allows.
func FuzzCheckAccess(f *testing.F) {
	f.Add([]byte(`{"mode":"single-node-writer","claims":[{"taskgroup":"a","node":"n1","mode":"write"}],"claim":{"taskgroup":"b","node":"n2","mode":"write"}}`))
	f.Add([]byte(`{"mode":"multi-node-single-writer","claims":[{"taskgroup":"a","node":"n1","mode":"read"}],"claim":{"taskgroup":"a","node":"n1","mode":"write"}}`))
	f.Add([]byte(`{"mode":"multi-node-reader-only","claims":null,"claim":{"mode":"weird"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var in struct {
			Mode   string           `json:"mode"`
			Claims []v4.VolumeClaim `json:"claims"`
			Claim  v4.VolumeClaim   `json:"claim"`
		}
		if json.Unmarshal(data, &in) != nil {
			return
		}
		vol := volume(in.Mode, in.Claims...)
		if CheckAccess(vol, in.Claim) != nil {
			return
		}
		if readerOnly(in.Mode) && in.Claim.Mode != ModeRead {
			t.Fatalf("a %q claim admitted on a %s volume", in.Claim.Mode, in.Mode)
		}
		for _, h := range in.Claims {
			if h.TaskGroup == in.Claim.TaskGroup {
				continue
			}
			switch {
			case (in.Mode == v4.AccessSingleNodeWriter || in.Mode == v4.AccessSingleNodeReader) && h.Node != in.Claim.Node:
				t.Fatalf("a claim on %s admitted beside %+v on a %s volume", in.Claim.Node, h, in.Mode)
			case in.Mode == v4.AccessMultiNodeSingleWriter && in.Claim.Mode == ModeWrite && h.Mode == ModeWrite:
				t.Fatalf("a second writer admitted beside %+v", h)
			}
		}
	})
}

// A volume keeps at most MaxClaims claims: a new one past them is refused, a task group
// that holds one may claim again.
func TestCheckAccessBoundsClaims(t *testing.T) {
	vol := &v4.CSIVolume{Metadata: v4.ObjectMeta{Name: "shared"}, Spec: v4.VolumeSpec{AccessMode: v4.AccessMultiNodeMultiWriter}}
	for i := range MaxClaims {
		vol.Status.Claims = append(vol.Status.Claims, v4.VolumeClaim{TaskGroup: fmt.Sprintf("tg%d", i), Node: "n1", Mode: ModeWrite})
	}
	if err := CheckAccess(vol, v4.VolumeClaim{TaskGroup: "new", Node: "n2", Mode: ModeWrite}); err == nil {
		t.Fatalf("claim %d accepted", MaxClaims+1)
	}
	if err := CheckAccess(vol, v4.VolumeClaim{TaskGroup: "tg7", Node: "n1", Mode: ModeWrite}); err != nil {
		t.Fatalf("a held claim claimed again: %v", err)
	}
}
