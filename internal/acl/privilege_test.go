package acl

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestNeeds(t *testing.T) {
	p := &v4.PodSpec{
		NetworkMode: "host",
		Containers: []v4.Container{{
			Privileged: true,
			Parameters: []v4.Parameter{{Key: "pid", Value: "host"}, {Key: "cap-add", Value: "SYS_ADMIN"}, {Key: "device", Value: "/dev/vda"},
				{Key: "security-opt", Value: "seccomp=unconfined"}, {Key: "sysctl", Value: "net.ipv4.ip_forward=1"}, {Key: "ipc", Value: "host"},
				{Key: "uts", Value: "host"}, {Key: "userns", Value: "host"}, {Key: "cgroupns", Value: "host"},
				{Key: "ipc", Value: "private"}, {Key: "ulimit", Value: "nofile=1024"}, {Key: "security-opt", Value: "no-new-privileges"}},
			Volumes: []v4.Volume{{Volume: v4.VolumeMount{HostPath: "/", MountPath: "/host"}}, {Volume: v4.VolumeMount{MountPath: "/scratch"}}},
		}},
		Volumes: []v4.PodVolume{{Name: "tmp", EmptyDir: &v4.EmptyDirVolume{}}, {Name: "nfs", FlexVolume: &v4.FlexVolume{Driver: "acme/nfs"}},
			{Name: "sock", CSIPlugin: &v4.CSIPluginSource{Name: "hostpath.csi.k8s.io"}}},
	}
	got := map[string]string{}
	for _, n := range Needs("spec.template.spec", p) {
		got[n.Field] = n.Privilege
	}
	want := map[string]string{
		"spec.template.spec.networkMode":                              PrivHostNetwork,
		"spec.template.spec.containers[0].privileged":                 PrivPrivileged,
		"spec.template.spec.containers[0].parameters[0]":              PrivHostPID,
		"spec.template.spec.containers[0].parameters[1]":              PrivCapAdd,
		"spec.template.spec.containers[0].parameters[2]":              PrivDevices,
		"spec.template.spec.containers[0].parameters[3]":              PrivUnconfined,
		"spec.template.spec.containers[0].parameters[4]":              PrivSysctl,
		"spec.template.spec.containers[0].parameters[5]":              PrivHostIPC,
		"spec.template.spec.containers[0].parameters[6]":              PrivHostUTS,
		"spec.template.spec.containers[0].parameters[7]":              PrivHostUserns,
		"spec.template.spec.containers[0].parameters[8]":              PrivHostCgroupns,
		"spec.template.spec.containers[0].volumes[0].volume.hostPath": PrivHostPath,
		"spec.template.spec.volumes[1].flexVolume":                    PrivFlexVolume,
		"spec.template.spec.volumes[2].csiPlugin":                     PrivCSIPlugin,
	}
	if len(got) != len(want) {
		t.Errorf("needs %v, want %v", got, want)
	}
	for f, p := range want {
		if got[f] != p {
			t.Errorf("%s: %q, want %q", f, got[f], p)
		}
	}

	proc := &v4.PodSpec{Processes: []v4.ProcessTask{
		{User: "root", ConfigMaps: []v4.ConfigMapRef{{Name: "c", Items: []v4.ConfigMapItem{{Type: "file", KeyOrPath: "/etc/cron.d/x"}, {Type: "file", KeyOrPath: "${workPath}/conf/x"}}}}},
		{User: "nobody", Secrets: []v4.SecretRef{{SecretName: "s", Items: []v4.SecretItem{{Type: "file", KeyOrPath: "/root/.ssh/authorized_keys"}, {Type: "env", KeyOrPath: "PW"}}}}},
		{},
		{User: "nobody", WorkPath: "/etc", URIs: []v4.URI{{Value: "https://x/p.tgz", OutputDir: "/usr/bin"}, {Value: "https://x/q.tgz", OutputDir: "${workPath}/bin"}}},
		{User: "00", PidFile: "/run/x.pid", URIs: []v4.URI{{Value: "file:///var/lib/berth/admin-token"}},
			Secrets: []v4.SecretRef{{SecretName: "s", Items: []v4.SecretItem{{Type: "file", KeyOrPath: "${workPath}/k", User: "000"}}}}},
		{User: "0nobody", PidFile: "${run_base_dir}/x.pid"},
	}}
	var fields []string
	for _, n := range Needs("spec", proc) {
		fields = append(fields, n.Field+"="+n.Privilege)
	}
	wantProc := []string{"spec.processes[0].user=root", "spec.processes[0].configmaps[0].items[0].keyOrPath=host-path",
		"spec.processes[1].secrets[0].items[0].keyOrPath=host-path",
		"spec.processes[3].workPath=host-path", "spec.processes[3].uris[0].outputDir=host-path",
		"spec.processes[4].user=root", "spec.processes[4].pidFile=host-path", "spec.processes[4].uris[0].value=host-path",
		"spec.processes[4].secrets[0].items[0].user=root"}
	if !slices.Equal(fields, wantProc) {
		t.Errorf("process needs %v, want %v", fields, wantProc)
	}
	var paths []string
	for _, n := range Needs("spec", proc) {
		if n.Privilege == PrivHostPath {
			paths = append(paths, n.Path)
		}
	}
	if want := []string{"/etc/cron.d/x", "/root/.ssh/authorized_keys", "/etc", "/usr/bin", "/run/x.pid", "/var/lib/berth/admin-token"}; !slices.Equal(paths, want) {
		t.Errorf("host paths %v, want %v", paths, want)
	}
}

// A privilege is granted only by a rule that lists it and also allows the write.
func TestPrivilegeRules(t *testing.T) {
	p := &Policy{Kind: KindPolicy, Metadata: PolicyMeta{Name: "infra"}, Rules: []Rule{
		{Namespaces: []string{"infra"}, Kinds: []string{"application"}, Verbs: []string{"write"}, Privileges: []string{"host-network"}},
		{Namespaces: []string{"*"}, Kinds: []string{"*"}, Verbs: []string{"write"}},
	}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		req  Request
		want bool
	}{
		{Request{Verb: "write", Kind: "application", Namespace: "infra", Privilege: PrivHostNetwork}, true},
		{Request{Verb: "write", Kind: "application", Namespace: "infra", Privilege: PrivPrivileged}, false},
		{Request{Verb: "write", Kind: "application", Namespace: "dev", Privilege: PrivHostNetwork}, false},
		{Request{Verb: "write", Kind: "process", Namespace: "infra", Privilege: PrivHostNetwork}, false},
		{Request{Verb: "write", Kind: "process", Namespace: "dev"}, true},
	} {
		if got := p.Allows(c.req); got != c.want {
			t.Errorf("%s: %v, want %v", c.req, got, c.want)
		}
	}
	bad := &Policy{Kind: KindPolicy, Metadata: PolicyMeta{Name: "x"}, Rules: []Rule{{Namespaces: []string{"*"}, Kinds: []string{"*"}, Verbs: []string{"write"}, Privileges: []string{"god-mode"}}}}
	if err := bad.Validate(); err == nil || !slices.ContainsFunc(err.(v4.FieldErrors), func(e v4.FieldError) bool { return e.Field == "rules[0].privileges[0]" }) {
		t.Fatalf("unknown privilege: %v", err)
	}
}

// Root is uid 0 however it is spelled; a name that only starts with zeros is not.
func TestIsRootUser(t *testing.T) {
	for u, want := range map[string]bool{"root": true, "0": true, "00": true, " 000 ": true, "": false,
		"nobody": false, "0nobody": false, "10": false, "Root": false} {
		if got := IsRootUser(u); got != want {
			t.Errorf("IsRootUser(%q) = %v, want %v", u, got, want)
		}
	}
}
