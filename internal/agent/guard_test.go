package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func oneContainerTG(c v4.Container, networkMode string) *v4.TaskGroup {
	tg := processTG("g")
	tg.Spec.Template.Spec = v4.PodSpec{NetworkMode: networkMode, Containers: []v4.Container{c}}
	return tg
}

// guardCase is one task group a guard admits or refuses.
type guardCase struct {
	name  string
	g     guard
	tg    *v4.TaskGroup
	field string // "" when admitted
	want  string // somewhere in the refusal
}

// runGuardCases admits each case's task group with its guard: an admitted case must pass,
// a refused one must name its field and say want.
func runGuardCases(t *testing.T, cases []guardCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.admit(c.tg)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("admitted")
			}
			if !strings.Contains(err.Error(), c.field+": ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v: want the field %s and %q", err, c.field, c.want)
			}
		})
	}
}

func TestGuard(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink inside an allowed directory must not carry a mount out of it.
	if err := os.Symlink("/etc", filepath.Join(data, "escape")); err != nil {
		t.Fatal(err)
	}
	vol := func(host string, ro bool) v4.Container {
		return v4.Container{Image: "x", Volumes: []v4.Volume{{Volume: v4.VolumeMount{HostPath: host, MountPath: "/m", ReadOnly: ro}}}}
	}
	proc := func(p v4.ProcessTask) *v4.TaskGroup {
		tg := processTG("g")
		tg.Spec.Template.Spec.Processes[0] = p
		return tg
	}
	secure := guard{}
	volumes, err := parseHostVolumes([]string{data, "/srv/ro:ro"})
	if err != nil {
		t.Fatal(err)
	}
	withVolumes := guard{volumes: volumes}
	privileged := guard{privileged: true}
	everything := guard{privileged: true, volumes: []hostVolume{{dir: "/"}}}

	runGuardCases(t, []guardCase{
		{"plain container", secure, oneContainerTG(v4.Container{Image: "x"}, "BRIDGE"), "", ""},
		{"plain process", secure, proc(v4.ProcessTask{StartCmd: "x"}), "", ""},
		{"process as nobody", secure, proc(v4.ProcessTask{StartCmd: "x", User: "nobody"}), "spec.template.spec.processes[0].user", "--task-users"},
		{"process as a listed user", guard{users: userPolicy{allowed: []uint32{nobodyUID(t)}}}, proc(v4.ProcessTask{StartCmd: "x", User: "nobody"}), "", ""},
		{"privileged container", secure, oneContainerTG(v4.Container{Image: "x", Privileged: true}, ""),
			"spec.template.spec.containers[0].privileged", "--allow-privileged"},
		{"host network", secure, oneContainerTG(v4.Container{Image: "x"}, "HOST"), "spec.template.spec.networkMode", `"host-network"`},
		{"cap-add", secure, oneContainerTG(v4.Container{Image: "x", Parameters: []v4.Parameter{{Key: "cap-add", Value: "SYS_ADMIN"}}}, ""),
			"spec.template.spec.containers[0].parameters[0]", `"cap-add"`},
		{"root process", secure, proc(v4.ProcessTask{StartCmd: "x", User: "root"}), "spec.template.spec.processes[0].user", `"root"`},
		{"uid 0 by number", secure, proc(v4.ProcessTask{StartCmd: "x", User: "0"}), "spec.template.spec.processes[0].user", `"root"`},
		{"privileged allowed", privileged, oneContainerTG(v4.Container{Image: "x", Privileged: true}, "HOST"), "", ""},
		{"root allowed", privileged, proc(v4.ProcessTask{StartCmd: "x", User: "root"}), "", ""},
		{"host path, no volumes", secure, oneContainerTG(vol("/", false), ""), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "--host-volumes: none"},
		{"privileged is not host paths", privileged, oneContainerTG(vol(data, false), ""), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "not among"},
		{"allowed dir", withVolumes, oneContainerTG(vol(data, false), ""), "", ""},
		{"below an allowed dir", withVolumes, oneContainerTG(vol(filepath.Join(data, "logs", "new"), false), ""), "", ""},
		{"dot-dot out", withVolumes, oneContainerTG(vol(data+"/../../etc", false), ""), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "not among"},
		{"symlink out", withVolumes, oneContainerTG(vol(filepath.Join(data, "escape", "shadow"), false), ""), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "not among"},
		{"prefix is not a parent", withVolumes, oneContainerTG(vol(data+"x", false), ""), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "not among"},
		{"read-only dir, read-only mount", withVolumes, oneContainerTG(vol("/srv/ro/a", true), ""), "", ""},
		{"read-only dir, writable mount", withVolumes, oneContainerTG(vol("/srv/ro/a", false), ""), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "mount it readOnly"},
		{"process workPath", withVolumes, proc(v4.ProcessTask{StartCmd: "x", WorkPath: "/opt/app"}), "spec.template.spec.processes[0].workPath", "not among"},
		{"process workPath allowed", withVolumes, proc(v4.ProcessTask{StartCmd: "x", WorkPath: filepath.Join(data, "app")}), "", ""},
		{"everything", everything, oneContainerTG(vol("/", false), "HOST"), "", ""},
		{"csi plugin", secure, csiPluginTG(), "spec.template.spec.volumes[0].csiPlugin", "--allow-privileged"},
		{"csi plugin allowed", privileged, csiPluginTG(), "", ""},
	})
}

// csiPluginTG is a container task group that serves a CSI plugin.
func csiPluginTG() *v4.TaskGroup {
	tg := oneContainerTG(v4.Container{Image: "x", Volumes: []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/csi", PodVolume: "sock"}}}}, "")
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "sock", CSIPlugin: &v4.CSIPluginSource{Name: "hostpath.csi.k8s.io"}}}
	return tg
}

func TestParseHostVolumes(t *testing.T) {
	got, err := parseHostVolumes([]string{"/data/", " /logs:ro ", ""})
	if err != nil || len(got) != 2 || got[0] != (hostVolume{dir: "/data"}) || got[1] != (hostVolume{dir: "/logs", readOnly: true}) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"data", "./x:ro", ":ro"} {
		if _, err := parseHostVolumes([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
