package deployd

import (
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Lain's procs carry Volumes ["/lain/logs"] in every container: each is an instance
// volume of its container, read back as deployd's Volumes; the pod group stays
// stateless, and CloudVolumes are refused saying why.
func TestPerInstanceVolumes(t *testing.T) {
	pg := &PodGroupSpec{NumInstances: 2, Pod: PodSpec{Containers: []ContainerSpec{
		{Image: "web", Volumes: []string{"/lain/logs"}, SystemVolumes: []string{"/etc/localtime:/etc/localtime:ro"}},
		{Image: "sidecar", Volumes: []string{"/lain/logs", "/data"}},
	}}}
	pg.Name, pg.Namespace = "hello.web.web", "hello"
	c, err := deploymentOf(pg)
	if err != nil {
		t.Fatal(err)
	}
	d := c.obj.(*v4.Deployment)
	if v4.Stateful(&d.Metadata) {
		t.Error("/lain/logs made the pod group stateful")
	}
	cs := d.Spec.Template.Spec.Containers
	want0 := []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/lain/logs", Instance: true}},
		{Volume: v4.VolumeMount{HostPath: "/etc/localtime", MountPath: "/etc/localtime", ReadOnly: true}}}
	want1 := []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/lain/logs", Instance: true}}, {Volume: v4.VolumeMount{MountPath: "/data", Instance: true}}}
	if !slices.Equal(cs[0].Volumes, want0) || !slices.Equal(cs[1].Volumes, want1) {
		t.Fatalf("volumes %+v and %+v", cs[0].Volumes, cs[1].Volumes)
	}
	v4.Default(d)
	if errs := v4.Validate(d); len(errs) > 0 {
		t.Fatalf("the deployment is not valid: %v", errs)
	}
	if len(c.warnings) > 0 {
		t.Errorf("warnings %v", c.warnings)
	}

	back := containerSpecOf(cs[0])
	if !slices.Equal(back.Volumes, []string{"/lain/logs"}) || !slices.Equal(back.SystemVolumes, []string{"/etc/localtime:/etc/localtime:ro"}) {
		t.Errorf("read back: Volumes %v SystemVolumes %v", back.Volumes, back.SystemVolumes)
	}
	if back := containerSpecOf(cs[1]); !slices.Equal(back.Volumes, []string{"/lain/logs", "/data"}) || len(back.SystemVolumes) != 0 {
		t.Errorf("read back: Volumes %v SystemVolumes %v", back.Volumes, back.SystemVolumes)
	}

	pg.Pod.Containers[1].CloudVolumes = []CloudVolumeSpec{{Type: "single", Dirs: []string{"/shared"}}}
	if _, err := deploymentOf(pg); err == nil || !strings.Contains(err.Error(), "Pod.Containers[1].CloudVolumes") || !strings.Contains(err.Error(), "cloud disk") {
		t.Errorf("CloudVolumes: %v", err)
	}
}

// A hostile per-instance path is refused by berth's validation of the deployment, with
// the field named.
func TestPerInstanceVolumeHostilePath(t *testing.T) {
	for _, p := range []string{"/lain/../../etc", "lain/logs", "/", "/lain/logs/"} {
		pg := &PodGroupSpec{NumInstances: 1, Pod: PodSpec{Containers: []ContainerSpec{{Image: "web", Volumes: []string{p}}}}}
		pg.Name, pg.Namespace = "hello.web.web", "hello"
		c, err := deploymentOf(pg)
		if err != nil {
			continue
		}
		v4.Default(c.obj)
		errs := v4.Validate(c.obj)
		if len(errs) == 0 || !strings.Contains(errs[0].Field, "volumes[0].volume.mountPath") {
			t.Errorf("%q: %v", p, errs)
		}
	}
}
