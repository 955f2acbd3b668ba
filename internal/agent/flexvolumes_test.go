package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// A flexVolume needs a node that runs FlexVolume drivers, not --allow-privileged: the
// operator who installed a driver lets workloads use it.
func TestGuardFlexVolume(t *testing.T) {
	tg := oneContainerTG(v4.Container{Image: "x"}, "NONE")
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "nfs", FlexVolume: &v4.FlexVolume{Driver: "acme/nfs"}}}
	runGuardCases(t, []guardCase{
		{"with drivers", guard{flexVolumes: true}, tg, "", ""},
		{"without drivers", guard{privileged: true}, tg, "spec.template.spec.volumes[0].flexVolume", "runs no FlexVolume drivers"},
	})
}

// The node lists its drivers in an attribute, and the agent's sweep leaves the records of
// the pods in its checkpoint alone.
func TestFlexVolumeWiring(t *testing.T) {
	plugins := t.TempDir()
	dir := filepath.Join(plugins, "acme~nfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nfs"), []byte("#!/bin/sh\necho '{\"status\":\"Success\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		t.Skip("the drivers must be root's")
	}
	data := t.TempDir()
	a, err := New(Config{ServerURLs: []string{"https://127.0.0.1:1"}, DataDir: data, NodeName: "n1", VolumePluginDir: plugins,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	n := &v4.Node{}
	a.describeFlexVolumes(n)
	if got := n.Spec.Attributes.Set[FlexVolumeDriversAttribute]; !slices.Equal(got, []string{"acme/nfs"}) {
		t.Fatalf("attribute: %v", got)
	}
	if a.ckpt, err = loadCheckpoint(filepath.Join(data, "checkpoint.json"), "n1"); err != nil {
		t.Fatal(err)
	}
	tg := processTG("kept")
	if err := a.ckpt.put(tg, t.TempDir(), ""); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kept, gone := filepath.Join(t.TempDir(), "kept"), filepath.Join(t.TempDir(), "gone")
	for pod, d := range map[string]string{tgKey(tg.Metadata.Namespace, "kept"): kept, "ns/gone": gone} {
		if err := a.flex.Mount(ctx, pod, d, &v4.FlexVolume{Driver: "acme/nfs"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	a.flex.Sweep(ctx, a.runsPod, time.Now())
	recs, err := a.flex.Records()
	if err != nil || len(recs) != 1 || recs[0].Dir != kept {
		t.Fatalf("records after the sweep: %+v, %v", recs, err)
	}
}
