package scheduler

import (
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// BenchmarkPlaceCSI is BenchmarkPlace's binpack shape on 5,000 nodes, each running plugin
// hp in one of three zones, with every instance claiming (read only) a
// multi-node-reader-only volume accessible from zone z0: the volume check on every
// candidate and every placement, against BenchmarkPlace/binpack/nodes=5000.
func BenchmarkPlaceCSI(b *testing.B) {
	base := benchNodes(5000)
	for i, n := range base.sortedNodes() {
		n.setPlugins([]v4.CSIPlugin{{Name: "hp", Node: true, Healthy: true, MaxVolumes: 100,
			Topology: map[string]string{"zone": fmt.Sprintf("z%d", i%3)}}})
	}
	v := &v4.CSIVolume{Metadata: v4.ObjectMeta{Namespace: "bench", Name: "data"},
		Spec:   v4.VolumeSpec{Plugin: "hp", AccessMode: v4.AccessMultiNodeReader},
		Status: v4.VolumeStatus{Phase: v4.VolumeAvailable, Topology: []v4.VolumeTopology{{Segments: map[string]string{"zone": "z0"}}}}}
	base.SetVolume(v)
	for _, m := range []int{300, 1200} {
		b.Run(fmt.Sprintf("instances=%d", m), func(b *testing.B) {
			req := benchRequest(m, false)
			req.Volumes = []v4.PodVolume{{Name: "d", CSI: &v4.CSIVolumeSource{Volume: "data", ReadOnly: true}}}
			b.ReportAllocs()
			placed := 0
			for b.Loop() {
				b.StopTimer()
				s := base.Clone()
				b.StartTimer()
				placed = len(s.Place(req, Options{}).Placements)
			}
			b.ReportMetric(float64(placed), "placed")
		})
	}
}
