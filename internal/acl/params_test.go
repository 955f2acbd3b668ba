package acl

import (
	"fmt"
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Each docker parameter is judged by its key and value: the harmless ones need nothing,
// the rest the privilege that names what they do to the node, and an unknown key the
// catch-all one.
func TestParamPrivilege(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		// Harmless: the container's own resources, names, users and lifecycle.
		{"memory-reservation", "256", ""},
		{"memory-swappiness", "0", ""},
		{"memory-swap", "1024", ""},
		{"memory-swap", "2g", ""},
		{"shm-size", "64", ""},
		{"tmpfs", "/run:size=64m", ""},
		{"cpuset", "true", ""},
		{"cpuset-cpus", "0-1", ""},
		{"cpuset-mems", "0", ""},
		{"blkio-weight", "1000", ""},
		{"device-read-bps", "/dev/sda:1mb", ""},
		{"device-write-iops", "/dev/sda:100", ""},
		{"cpu-rt-runtime", "950000", ""},
		{"pids-limit", "512", ""},
		{"dns", "10.0.0.2", ""},
		{"dns-search", "example.com", ""},
		{"dns-option", "ndots:2", ""},
		{"add-host", "db:10.0.0.5", ""},
		{"user", "0", ""},
		{"group-add", "audio", ""},
		{"cap-drop", "ALL", ""},
		{"label", "team=web", ""},
		{"stop-signal", "SIGINT", ""},
		{"init", "true", ""},
		{"read-only", "true", ""},
		{"rm", "true", ""},
		{"oom-score-adj", "500", ""},
		{"oom-kill-disable", "false", ""},
		{"P", "false", ""},
		{"net", "bridge", ""},
		{"net", "my-user-net", ""},
		{"ipc", "shareable", ""},
		{"pid", "private", ""},
		{"cgroupns", "private", ""},
		{"ulimit", "nofile=65536:65536", ""},
		{"ulimit", "memlock=8388608", ""},
		{"ulimit", "nproc=4096", ""},
		{"ulimit", "core=0", ""},
		{"security-opt", "no-new-privileges", ""},
		{"security-opt", "no-new-privileges=true", ""},
		{"security-opt", "seccomp=builtin", ""},
		{"security-opt", "seccomp=default", ""},
		{"security-opt", "seccomp=strict", ""}, // a name: the node resolves it from its own list
		{"security-opt", "apparmor=docker-default", ""},
		{"security-opt", "writable-cgroups=false", ""},
		{"--memory-reservation", "256", ""}, // dashes, as the driver takes them

		// The node's namespaces, or another container's.
		{"net", "host", PrivHostNetwork},
		{"network", "HOST", PrivHostNetwork},
		{"net", "container:berth-0.web.other.1-web", PrivHostNetwork},
		{"ipc", "container:victim", PrivHostIPC},
		{"pid", "container:victim", PrivHostPID},
		{"uts", "host", PrivHostUTS},
		{"userns", "host", PrivHostUserns},
		{"cgroupns", "host", PrivHostCgroupns},
		{"cap-add", "NET_ADMIN", PrivCapAdd},
		{"device", "/dev/kvm", PrivDevices},
		{"sysctl", "net.ipv4.ip_forward=1", PrivSysctl},

		// What a namespace-limited token could run before parameters were an allow-list.
		{"cgroup-parent", "/berth/other-namespace", PrivCgroupParent},
		{"--cgroup-parent", "x", PrivCgroupParent},
		{"log-driver", "syslog", PrivLogDriver},
		{"log-opt", "syslog-address=tcp://203.0.113.7:514", PrivLogDriver},
		{"log-opt", "max-size=10m", PrivLogDriver},
		{"oom-score-adj", "-1000", PrivOOMScoreAdj},
		{"oom-score-adj", "x", PrivOOMScoreAdj},
		{"oom-kill-disable", "true", PrivOOMScoreAdj},
		{"oom-kill-disable", "", PrivOOMScoreAdj}, // a bare flag is true
		{"ulimit", "memlock=-1", PrivUlimit},
		{"ulimit", "memlock=-1:-1", PrivUlimit},
		{"ulimit", "nofile=1024:-1", PrivUlimit},
		{"ulimit", "memlock=8388609", PrivUlimit},
		{"ulimit", "nofile=1048577", PrivUlimit},
		{"ulimit", "rtprio=99", PrivUlimit},
		{"ulimit", "nice=40", PrivUlimit},
		{"ulimit", "core=1", PrivUlimit},
		{"ulimit", "nofile=-2:-2", PrivUlimit}, // any negative is the kernel's infinity
		{"ulimit", "as=1", PrivUlimit},         // a name Docker does not take
		{"ulimit", "nofile", PrivUlimit},
		{"pids-limit", "-1", PrivUlimit},
		{"pids-limit", "0", PrivUlimit},
		{"pids-limit", "+0", PrivUlimit},
		{"memory-swap", "-1", PrivUlimit},
		{"memory-swap", "NaN", PrivUlimit},
		{"security-opt", `seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`, PrivSecurityProfile},
		{"security-opt", "seccomp=/etc/berth/permissive.json", PrivSecurityProfile},
		{"security-opt", "seccomp:/etc/permissive.json", PrivSecurityProfile},
		{"security-opt", "apparmor=lxc-container-default-with-nesting", PrivSecurityProfile},
		{"security-opt", "label=type:spc_t", PrivSecurityProfile},
		{"security-opt", "label=level:s0:c1,c2", PrivSecurityProfile},
		{"security-opt", "no-new-privileges=maybe", PrivSecurityProfile},
		{"security-opt", "something", PrivSecurityProfile},
		{"security-opt", "mask=/proc/kcore", PrivSecurityProfile},
		{"security-opt", "seccomp=unconfined", PrivUnconfined},
		{"security-opt", "apparmor=unconfined", PrivUnconfined},
		{"security-opt", "label=disable", PrivUnconfined},
		{"security-opt", "label:disable", PrivUnconfined},
		{"security-opt", "disable", PrivUnconfined},
		{"security-opt", "no-new-privileges=false", PrivUnconfined},
		{"security-opt", "no-new-privileges:false", PrivUnconfined},
		{"security-opt", "systempaths=unconfined", PrivUnconfined},
		{"security-opt", "writable-cgroups", PrivUnconfined},
		{"security-opt", "writable-cgroups=true", PrivUnconfined},
		{"P", "", PrivParameter},
		{"P", "true", PrivParameter},
		{"ip", "10.0.0.9", PrivParameter},
		{"mac-address", "02:42:ac:11:00:02", PrivParameter},
		{"privileged", "true", PrivParameter}, // unknown keys
		{"volume", "/:/host", PrivParameter},
		{"Net", "host", PrivParameter},
		{" net", "bridge", PrivParameter},
	} {
		if got := ParamPrivilege(c.key, c.value); got != c.want {
			t.Errorf("%s=%s: %q, want %q", c.key, c.value, got, c.want)
		}
	}
}

// The fixed table covers every ulimit Docker takes, so that a known name is judged by
// its ceiling rather than refused for being unknown.
func TestUlimitCeilingsCoverDocker(t *testing.T) {
	for _, name := range []string{"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile",
		"nproc", "rss", "rtprio", "rttime", "sigpending", "stack"} {
		if _, err := ParseUlimit(name + "=0"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, ok := ulimitCeilings[name]; !ok {
			t.Errorf("%s has no ceiling", name)
		}
	}
	u, err := ParseUlimit("nofile=1024:-1")
	if err != nil || u != (Ulimit{Name: "nofile", Soft: 1024, Hard: Unlimited}) {
		t.Fatalf("%+v %v", u, err)
	}
}

func TestSeccompProfile(t *testing.T) {
	for _, c := range []struct {
		v, name string
		ok      bool
	}{
		{"seccomp=strict", "strict", true},
		{" seccomp=web.v2 ", "web.v2", true},
		{"seccomp:strict", "strict", true},
		{"seccomp=builtin", "", false},
		{"seccomp=default", "", false},
		{"seccomp=unconfined", "", false},
		{"seccomp=/etc/x.json", "", false},
		{`seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`, "", false},
		{"apparmor=strict", "", false},
	} {
		if name, ok := SeccompProfile(c.v); name != c.name || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.v, name, ok, c.name, c.ok)
		}
	}
}

// Needs reports every parameter that needs a privilege, each with its field and key, and
// none of the harmless ones.
func TestNeedsOfParameters(t *testing.T) {
	params := []v4.Parameter{{Key: "memory-reservation", Value: "64"}, {Key: "cgroup-parent", Value: "/x"},
		{Key: "log-driver", Value: "syslog"}, {Key: "label", Value: "a=b"}, {Key: "ulimit", Value: "memlock=-1"},
		{Key: "oom-score-adj", Value: "-500"}, {Key: "security-opt", Value: `seccomp={}`}}
	p := &v4.PodSpec{Containers: []v4.Container{{Image: "x"}, {Image: "y", Parameters: params}}}
	var got []string
	for _, n := range Needs("spec.template.spec", p) {
		got = append(got, fmt.Sprintf("%s %s %s", n.Field, n.Privilege, n.Param))
	}
	f := "spec.template.spec.containers[1].parameters"
	want := []string{f + "[1] cgroup-parent cgroup-parent", f + "[2] log-driver log-driver", f + "[4] ulimit ulimit",
		f + "[5] oom-score-adj oom-score-adj", f + "[6] security-profile security-opt"}
	if !slices.Equal(got, want) {
		t.Errorf("needs\n%v\nwant\n%v", got, want)
	}
}
