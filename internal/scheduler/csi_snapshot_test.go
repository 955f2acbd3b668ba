package scheduler

import (
	"reflect"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// A request without csi volumes places as it did before volumes existed, on nodes with
// plugins and a snapshot with volumes alike, and compiles no volume check.
func TestCSINoVolumesUnchanged(t *testing.T) {
	db := claimingTG("db", "n2", v4.StatusRunning, "data", false)
	db.Spec.Template.Spec.Volumes = nil
	plain := csiSnapshot(nil, db)
	withVols := csiSnapshot([]*v4.CSIVolume{vol("data", "", claim("x", "n1", "write"))},
		claimingTG("db", "n2", v4.StatusRunning, "data", false))
	opts := Options{Now: func() time.Time { return time.Unix(1, 0) }}
	req := request(webApp, nil, 5)
	if st := withVols.compile(req, opts); st.csi != nil {
		t.Fatalf("volume asks %+v", st.csi)
	}
	a, b := plain.Place(req, opts), withVols.Place(request(webApp, nil, 5), opts)
	if !reflect.DeepEqual(nodesAndIndexes(a), nodesAndIndexes(b)) {
		t.Errorf("placements differ: %v / %v", nodesAndIndexes(a), nodesAndIndexes(b))
	}
}

func nodesAndIndexes(r Result) []string {
	var out []string
	for _, p := range r.Placements {
		out = append(out, p.Node)
	}
	return out
}

// The request takes the pod's csi volumes; a task group's claims come and go with it,
// a volume's claims with its object, and a clone keeps its own.
func TestCSISnapshotBookkeeping(t *testing.T) {
	app := &v4.Application{}
	app.Kind, app.Metadata = v4.KindApplication, v4.ObjectMeta{Namespace: "ns-a", Name: "web"}
	app.Spec.Template.Spec = v4.PodSpec{NetworkMode: "HOST", Containers: []v4.Container{{Image: "x"}},
		Volumes: []v4.PodVolume{{Name: "tmp", EmptyDir: &v4.EmptyDirVolume{}}, csiVolume("data", true)}}
	req, err := RequestFor(app, []int{0})
	if err != nil || len(req.Volumes) != 1 || req.Volumes[0].CSI.Volume != "data" {
		t.Fatalf("request %+v, %v", req, err)
	}

	s := csiSnapshot([]*v4.CSIVolume{vol("data", ""), vol("logs", "", claim("x", "n3", "write"))})
	s.SetTaskGroup(claimingTG("db", "n2", v4.StatusRunning, "data", false))
	if got := s.csiUse; !reflect.DeepEqual(got, map[string]map[string]int{"n2": {"hp": 1}, "n3": {"hp": 1}}) {
		t.Fatalf("use %v", got)
	}
	clone := s.Clone()
	s.RemoveTaskGroup(webApp.Namespace, claimingTG("db", "n2", "", "data", false).Metadata.Name)
	s.RemoveVolume(webApp.Namespace, "logs")
	if len(s.csiUse) != 0 || len(s.volumes) != 1 {
		t.Errorf("after removal: use %v, volumes %d", s.csiUse, len(s.volumes))
	}
	assertNodes(t, feasible(s, req), []string{"n1", "n2", "n3"})
	// The clone still has the claim on n2 (single-node-writer) and the volume logs.
	assertNodes(t, feasible(clone, req), []string{"n2"})
	if len(clone.csiUse) != 2 || !clone.volumes[webApp.Namespace+"/logs"].exists {
		t.Errorf("clone changed: %v", clone.csiUse)
	}

	// A task group that claims a volume not yet created keeps its claim for it.
	s = csiSnapshot(nil, claimingTG("db", "n1", v4.StatusRunning, "data", false))
	s.SetVolume(vol("data", ""))
	assertNodes(t, feasible(s, req), []string{"n1"})
	s.RemoveVolume(webApp.Namespace, "data")
	if s.volumes[webApp.Namespace+"/data"] == nil {
		t.Error("a claimed volume's state went with its object")
	}
}

// A daemonset's node without the volume's plugin is not eligible; one whose volume is
// claimed elsewhere is, and says why it got nothing.
func TestCSIPlaceOn(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("bare"), csiNode("n1", hp("a")), csiNode("n2", hp("a"))})
	s.SetVolume(vol("data", "", claim("x", "n1", "write")))
	req := request(webApp, nil, 2)
	req.Volumes = []v4.PodVolume{csiVolume("data", false)}
	fits := s.PlaceOn(req, []string{"bare", "n2"}, Options{})
	if f := fits[0]; f.Eligible || f.Placement != nil || f.Reason != "volume data: the node has no healthy node plugin hp" {
		t.Errorf("bare: %+v", f)
	}
	if f := fits[1]; !f.Eligible || f.Placement != nil || f.Reason != "volume data: single-node-writer, claimed on n1" {
		t.Errorf("n2: %+v", f)
	}
}
