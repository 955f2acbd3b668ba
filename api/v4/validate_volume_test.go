package v4

import (
	"strings"
	"testing"
)

func instanceVolume(mountPath string) Volume {
	return Volume{Volume: VolumeMount{MountPath: mountPath, Instance: true}}
}

func withVolumes(vols ...Volume) Object {
	return appWith(func(a *Application) { container(a).Volumes = vols })
}

// An instance volume's mount path names its directory on the node: hostile spellings,
// a host path beside it and too many of them are refused with the field named.
func TestInstanceVolumeRules(t *testing.T) {
	const v0 = "spec.template.spec.containers[0].volumes[0].volume"
	many := make([]Volume, MaxInstanceVolumes+1)
	for i := range many {
		many[i] = instanceVolume("/v" + strings.Repeat("x", i+1))
	}
	runRules(t, []ruleCase{
		{"dot-dot", withVolumes(instanceVolume("/lain/../../etc")), v0 + ".mountPath", "'..' segment"},
		{"dot-dot at the end", withVolumes(instanceVolume("/lain/..")), v0 + ".mountPath", "'..' segment"},
		{"dot segment", withVolumes(instanceVolume("/lain/./logs")), v0 + ".mountPath", "clean path"},
		{"double slash", withVolumes(instanceVolume("//lain//logs")), v0 + ".mountPath", "clean path"},
		{"trailing slash", withVolumes(instanceVolume("/lain/logs/")), v0 + ".mountPath", "clean path"},
		{"root", withVolumes(instanceVolume("/")), v0 + ".mountPath", "root"},
		{"relative", withVolumes(instanceVolume("lain/logs")), v0 + ".mountPath", "absolute"},
		{"empty", withVolumes(instanceVolume("")), v0 + ".mountPath", "required"},
		{"NUL", withVolumes(instanceVolume("/lain/\x00logs")), v0 + ".mountPath", "NUL"},
		{"very long", withVolumes(instanceVolume("/" + strings.Repeat("a", MaxMountPathLen))), v0 + ".mountPath", "at most 1024 bytes"},
		{"with a host path", withVolumes(Volume{Volume: VolumeMount{MountPath: "/logs", HostPath: "/etc", Instance: true}}), v0 + ".hostPath", "must be empty in an instance volume"},
		{"with a pod variable", withVolumes(Volume{Volume: VolumeMount{MountPath: "/logs", HostPath: "$BCS_POD_ID", Instance: true}}), v0 + ".hostPath", "must be empty"},
		{"twice", withVolumes(instanceVolume("/logs"), Volume{Volume: VolumeMount{MountPath: "/logs/"}}),
			"spec.template.spec.containers[0].volumes[1].volume.mountPath", "mounted twice"},
		{"too many", withVolumes(many...), "spec.template.spec.containers[0].volumes[16].volume.instance", "at most 16 instance volumes"},
	})
}

func TestInstanceVolumesAccepted(t *testing.T) {
	for _, vols := range [][]Volume{
		{instanceVolume("/lain/logs")},
		{instanceVolume("/lain/logs"), instanceVolume("/data"), {Volume: VolumeMount{MountPath: "/cache"}}},
		{instanceVolume("/a/..b/c.."), instanceVolume("/%2F/~x")}, // odd but clean names are escaped on the node
		{{Volume: VolumeMount{MountPath: "/lain/logs", Instance: true, ReadOnly: true}}},
	} {
		if errs := Validate(withVolumes(vols...)); len(errs) > 0 {
			t.Errorf("%+v: unexpected errors %v", vols, errs)
		}
	}
}

// The key is berth's own, decoded from BCS's JSON form of a container.
func TestInstanceVolumeDecodes(t *testing.T) {
	docs, err := Parse([]byte(`{"apiVersion":"v4","kind":"application","metadata":{"name":"logs","namespace":"ns"},
		"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"busybox",
		"volumes":[{"volume":{"mountPath":"/lain/logs","instance":true}}]}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs[0].Warnings) > 0 {
		t.Errorf("warnings %v", docs[0].Warnings)
	}
	a := docs[0].Object.(*Application)
	if v := a.Spec.Template.Spec.Containers[0].Volumes; len(v) != 1 || !v[0].Volume.Instance || v[0].Volume.MountPath != "/lain/logs" {
		t.Fatalf("volumes %+v", v)
	}
}
