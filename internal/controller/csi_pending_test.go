package controller

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// A process claiming a volume waits with the volume check in its pending status while
// the volume is missing, and is placed, on the node that runs the volume's plugin, once
// the feed brings the volume.
func TestCSIVolumePlacement(t *testing.T) {
	e := newEnv(t, "bare")
	e.node("plugged", func(n *v4.Node) {
		n.Status.CSIPlugins = []v4.CSIPlugin{{Name: "hp", Node: true, Healthy: true}}
	})
	e.applyDoc(`{"apiVersion":"v4","kind":"process","metadata":{"name":"db","namespace":"ctl"},
		"spec":{"instance":2,"template":{"spec":{"volumes":[{"name":"d","csi":{"volume":"data"}}],
		"processes":[{"procName":"db","startCmd":"./db","resources":{"limits":{"cpu":"0.5","memory":"64"}},
		"volumes":[{"volume":{"podVolume":"d","mountPath":"data"}}]}]}}}}`)
	e.eventually("pending on the volume", func() bool {
		p := e.status("db").Pending
		return p != nil && p.Check == scheduler.CheckVolume && p.Message == "2 nodes: 2 volume data: no such volume"
	})
	v := &v4.CSIVolume{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindVolume},
		Metadata: v4.ObjectMeta{Namespace: "ctl", Name: "data"}, Spec: v4.VolumeSpec{Plugin: "hp"},
		Status: v4.VolumeStatus{Phase: v4.VolumeAvailable}}
	if err := testStore.Create(context.Background(), v, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("both placed", func() bool { return len(e.taskGroups("db")) == 2 })
	for _, tg := range e.taskGroups("db") {
		if tg.Spec.Node != "plugged" {
			t.Errorf("%s on %s", tg.Metadata.Name, tg.Spec.Node)
		}
	}
}
