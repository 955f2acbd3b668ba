package v4

import (
	"fmt"
	"strings"
	"testing"
)

// withPodVolume is the base application with pod volume v, mounted by its container at
// /data.
func withPodVolume(v PodVolume) Object {
	return appWith(func(a *Application) {
		a.Spec.Template.Spec.Volumes = []PodVolume{v}
		container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "/data", PodVolume: v.Name}}}
	})
}

func memDir(size Quantity) PodVolume {
	return PodVolume{Name: "scratch", EmptyDir: &EmptyDirVolume{Medium: MediumMemory, SizeLimit: size}}
}

func cmVolume(items ...KeyToPath) PodVolume {
	return PodVolume{Name: "conf", ConfigMap: &ConfigMapVolume{Name: "app-conf", Items: items}}
}

func mode(m int) *int { return &m }

// withMemoryLimit gives the base application's container limits.memory.
func withMemoryLimit(v PodVolume, mem Quantity) Object {
	obj := withPodVolume(v).(*Application)
	container(obj).Resources = &Resources{Limits: &ResourceList{Memory: mem}}
	return obj
}

// Pod volumes and their mounts are refused with the field named, hostile paths and
// counts among them (a token limited to one namespace writes these).
func TestPodVolumeRules(t *testing.T) {
	const v0 = "spec.template.spec.volumes[0]"
	const m0 = "spec.template.spec.containers[0].volumes[0].volume"
	manyItems := make([]KeyToPath, MaxVolumeItems+1)
	for i := range manyItems {
		manyItems[i] = KeyToPath{Key: "k", Path: fmt.Sprintf("f%d", i)}
	}
	runRules(t, []ruleCase{
		{"medium", withPodVolume(PodVolume{Name: "d", EmptyDir: &EmptyDirVolume{Medium: "SSD"}}), v0 + ".emptyDir.medium", "SSD"},
		{"memory without size", withPodVolume(memDir("")), v0 + ".emptyDir.sizeLimit", "required for a Memory emptyDir"},
		{"negative size", withPodVolume(memDir("-5")), v0 + ".emptyDir.sizeLimit", "positive"},
		{"zero size", withPodVolume(memDir("0")), v0 + ".emptyDir.sizeLimit", "positive"},
		{"size not a number", withPodVolume(memDir("1Gi")), v0 + ".emptyDir.sizeLimit", "number of MB"},
		{"NaN size", withPodVolume(memDir("NaN")), v0 + ".emptyDir.sizeLimit", "number of MB"},
		{"huge size", withPodVolume(memDir("1e300")), v0 + ".emptyDir.sizeLimit", "at most"},
		{"huge disk size", withPodVolume(PodVolume{Name: "d", EmptyDir: &EmptyDirVolume{SizeLimit: "1e20"}}), v0 + ".emptyDir.sizeLimit", "at most"},
		{"memory over the pod's", withMemoryLimit(memDir("512"), "256"), v0 + ".emptyDir.sizeLimit", "an emptyDir memory limit over the pod's memory"},
		{"no source", withPodVolume(PodVolume{Name: "d"}), v0, "exactly one"},
		{"two sources", withPodVolume(PodVolume{Name: "d", EmptyDir: &EmptyDirVolume{}, ConfigMap: &ConfigMapVolume{Name: "c"}}), v0, "exactly one"},
		{"configmap name", withPodVolume(PodVolume{Name: "c", ConfigMap: &ConfigMapVolume{}}), v0 + ".configMap.name", "required"},
		{"configmap name with a dot", withPodVolume(PodVolume{Name: "c", ConfigMap: &ConfigMapVolume{Name: "../etc"}}), v0 + ".configMap.name", "letters"},
		{"secret name", withPodVolume(PodVolume{Name: "s", Secret: &SecretVolume{}}), v0 + ".secret.secretName", "required"},
		{"item key", withPodVolume(cmVolume(KeyToPath{Path: "a"})), v0 + ".configMap.items[0].key", "required"},
		{"item key form", withPodVolume(cmVolume(KeyToPath{Key: "a/b", Path: "a"})), v0 + ".configMap.items[0].key", "letters"},
		{"item path empty", withPodVolume(cmVolume(KeyToPath{Key: "a"})), v0 + ".configMap.items[0].path", "required"},
		{"item path absolute", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "/etc/passwd"})), v0 + ".configMap.items[0].path", "relative"},
		{"item path escapes", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "x/../../../etc/cron.d/x"})), v0 + ".configMap.items[0].path", "'..' segment"},
		{"item path is ..", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: ".."})), v0 + ".configMap.items[0].path", "'..' segment"},
		{"item path ..data", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "..data"})), v0 + ".configMap.items[0].path", "must not start with '..'"},
		{"item path unclean", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "x//y"})), v0 + ".configMap.items[0].path", "clean"},
		{"item path dot", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "."})), v0 + ".configMap.items[0].path", "clean"},
		{"item path NUL", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "a\x00b"})), v0 + ".configMap.items[0].path", "NUL"},
		{"item path long", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: strings.Repeat("a", 2000)})), v0 + ".configMap.items[0].path", "at most"},
		{"item path twice", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "x"}, KeyToPath{Key: "b", Path: "x"})), v0 + ".configMap.items[1].path", "also the path"},
		{"file and directory", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "x"}, KeyToPath{Key: "b", Path: "x/y"})), v0 + ".configMap.items[1].path", "file and a directory"},
		{"too many items", withPodVolume(cmVolume(manyItems...)), v0 + ".configMap.items", "at most 256 items"},
		{"item mode", withPodVolume(cmVolume(KeyToPath{Key: "a", Path: "a", Mode: mode(0o4755)})), v0 + ".configMap.items[0].mode", "0777"},
		{"decimal 644", withPodVolume(PodVolume{Name: "s", Secret: &SecretVolume{SecretName: "pw", DefaultMode: mode(644)}}), v0 + ".secret.defaultMode", "0777"},
		{"negative mode", withPodVolume(PodVolume{Name: "s", Secret: &SecretVolume{SecretName: "pw", DefaultMode: mode(-1)}}), v0 + ".secret.defaultMode", "0777"},
		{"too many volumes", appWith(func(a *Application) {
			for i := range MaxPodVolumes + 1 {
				a.Spec.Template.Spec.Volumes = append(a.Spec.Template.Spec.Volumes, PodVolume{Name: fmt.Sprintf("v%d", i), EmptyDir: &EmptyDirVolume{}})
			}
		}), "spec.template.spec.volumes", "at most 32 volumes"},
		{"volume name", withPodVolume(PodVolume{Name: "../x", EmptyDir: &EmptyDirVolume{}}), v0 + ".name", "DNS label"},
		{"unknown volume", appWith(func(a *Application) {
			container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "/data", PodVolume: "nope"}}}
		}), m0 + ".podVolume", "no volume \"nope\""},
		{"host path with it", appWith(func(a *Application) {
			a.Spec.Template.Spec.Volumes = []PodVolume{{Name: "d", EmptyDir: &EmptyDirVolume{}}}
			container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "/data", PodVolume: "d", HostPath: "/etc"}}}
		}), m0 + ".hostPath", "must be empty"},
		{"instance with it", appWith(func(a *Application) {
			a.Spec.Template.Spec.Volumes = []PodVolume{{Name: "d", EmptyDir: &EmptyDirVolume{}}}
			container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "/data", PodVolume: "d", Instance: true}}}
		}), m0 + ".instance", "not both"},
		{"mounted twice at one path", appWith(func(a *Application) {
			a.Spec.Template.Spec.Volumes = []PodVolume{{Name: "d", EmptyDir: &EmptyDirVolume{}}, {Name: "e", EmptyDir: &EmptyDirVolume{}}}
			container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "/data", PodVolume: "d"}}, {Volume: VolumeMount{MountPath: "/data/", PodVolume: "e"}}}
		}), "spec.template.spec.containers[0].volumes[1].volume.mountPath", "mounted twice"},
		{"csi volume of another namespace", withPodVolume(PodVolume{Name: "d", CSI: &CSIVolumeSource{Volume: "ns-b/data"}}), v0 + ".csi.volume", "letters"},
		{"csi volume up a level", withPodVolume(PodVolume{Name: "d", CSI: &CSIVolumeSource{Volume: "../data"}}), v0 + ".csi.volume", "letters"},
		{"csi volume required", withPodVolume(PodVolume{Name: "d", CSI: &CSIVolumeSource{}}), v0 + ".csi.volume", "required"},
		{"csi volume claimed twice", appWith(func(a *Application) {
			a.Spec.Template.Spec.Volumes = []PodVolume{{Name: "d", CSI: &CSIVolumeSource{Volume: "data"}}, {Name: "e", CSI: &CSIVolumeSource{Volume: "data", ReadOnly: true}}}
		}), "spec.template.spec.volumes[1].csi.volume", "claimed by volumes[0] already"},
	})
}

// withProcessVolume is the base process with an emptyDir "d" mounted at mountPath.
func withProcessVolume(mounts ...VolumeMount) Object {
	return procWith(func(p *Process) {
		p.Spec.Template.Spec.Volumes = []PodVolume{{Name: "d", EmptyDir: &EmptyDirVolume{}}}
		for _, m := range mounts {
			proc(p).Volumes = append(proc(p).Volumes, Volume{Volume: m})
		}
	})
}

// A process's mount path is a link the agent, root, places in its work directory: it
// must stay there.
func TestProcessVolumeRules(t *testing.T) {
	const v0 = "spec.template.spec.processes[0].volumes[0].volume"
	many := make([]VolumeMount, maxProcessVolumes+1)
	for i := range many {
		many[i] = VolumeMount{MountPath: fmt.Sprintf("d%d", i), PodVolume: "d"}
	}
	runRules(t, []ruleCase{
		{"empty", withProcessVolume(VolumeMount{PodVolume: "d"}), v0 + ".mountPath", "required"},
		{"absolute", withProcessVolume(VolumeMount{MountPath: "/etc", PodVolume: "d"}), v0 + ".mountPath", "relative"},
		{"escapes", withProcessVolume(VolumeMount{MountPath: "../../../../etc", PodVolume: "d"}), v0 + ".mountPath", "'..' segment"},
		{"dot", withProcessVolume(VolumeMount{MountPath: ".", PodVolume: "d"}), v0 + ".mountPath", "clean"},
		{"unclean", withProcessVolume(VolumeMount{MountPath: "a/./b", PodVolume: "d"}), v0 + ".mountPath", "clean"},
		{"NUL", withProcessVolume(VolumeMount{MountPath: "a\x00", PodVolume: "d"}), v0 + ".mountPath", "NUL"},
		{"twice", withProcessVolume(VolumeMount{MountPath: "a", PodVolume: "d"}, VolumeMount{MountPath: "a", PodVolume: "d"}),
			"spec.template.spec.processes[0].volumes[1].volume.mountPath", "mounted twice"},
		{"host path", withProcessVolume(VolumeMount{MountPath: "a", HostPath: "/etc"}), v0 + ".podVolume", "required"},
		{"host path beside a pod volume", withProcessVolume(VolumeMount{MountPath: "a", PodVolume: "d", HostPath: "/etc"}), v0 + ".hostPath", "must be empty"},
		{"unknown", withProcessVolume(VolumeMount{MountPath: "a", PodVolume: "x"}), v0 + ".podVolume", "no volume"},
		{"too many", withProcessVolume(many...), "spec.template.spec.processes[0].volumes", "at most 64"},
	})
}

func TestPodVolumesAccepted(t *testing.T) {
	for name, obj := range map[string]Object{
		"disk":                withPodVolume(PodVolume{Name: "d", EmptyDir: &EmptyDirVolume{}}),
		"disk with a limit":   withPodVolume(PodVolume{Name: "d", EmptyDir: &EmptyDirVolume{SizeLimit: "100"}}),
		"memory":              withPodVolume(memDir("64")),
		"memory within limit": withMemoryLimit(memDir("64"), "128"),
		"configmap": withPodVolume(cmVolume(KeyToPath{Key: "app.conf", Path: "etc/app.conf", Mode: mode(0o600)},
			KeyToPath{Key: "b", Path: "etc/b"}, KeyToPath{Key: "c", Path: ".hidden"})),
		"secret":  withPodVolume(PodVolume{Name: "s", Secret: &SecretVolume{SecretName: "pw", DefaultMode: mode(0o440), Static: true}}),
		"process": withProcessVolume(VolumeMount{MountPath: "cache/tmp", PodVolume: "d"}, VolumeMount{MountPath: "other", PodVolume: "d"}),
	} {
		Default(obj)
		if errs := Validate(obj); len(errs) > 0 {
			t.Errorf("%s: unexpected errors %v", name, errs)
		}
	}
}
