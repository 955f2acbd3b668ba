package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	v4 "github.com/berthhq/berth/api/v4"
)

// fixedLimits is a node whose agent has nofile 4096:65536, memlock 8 MiB, nice and rtprio
// 0, and everything else unlimited.
func fixedLimits(res int) (unix.Rlimit, error) {
	switch res {
	case unix.RLIMIT_NOFILE:
		return unix.Rlimit{Cur: 4096, Max: 65536}, nil
	case unix.RLIMIT_MEMLOCK:
		return unix.Rlimit{Cur: 8 << 20, Max: 8 << 20}, nil
	case unix.RLIMIT_NICE, unix.RLIMIT_RTPRIO:
		return unix.Rlimit{}, nil
	case unix.RLIMIT_MSGQUEUE:
		return unix.Rlimit{}, errors.New("no such limit here")
	}
	return unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil
}

func paramsTG(params ...v4.Parameter) *v4.TaskGroup {
	return oneContainerTG(v4.Container{Image: "x", Parameters: params}, "NONE")
}

// The node re-checks docker parameters at start: the new privileges need
// --allow-privileged, a ulimit is judged against the agent's own limits, and a seccomp
// profile must be one of --security-profiles, privileged or not.
func TestGuardParameters(t *testing.T) {
	profiles := map[string]string{"strict": `{"defaultAction":"SCMP_ACT_ERRNO"}`}
	secure := guard{limits: fixedLimits, seccomp: profiles}
	privileged := guard{privileged: true, limits: fixedLimits, seccomp: profiles}
	bare := guard{limits: fixedLimits}
	p := func(k, v string) v4.Parameter { return v4.Parameter{Key: k, Value: v} }
	const f0 = "spec.template.spec.containers[0].parameters[0]"
	runGuardCases(t, []guardCase{
		{"harmless", secure, paramsTG(p("memory-reservation", "64"), p("label", "a=b"), p("dns", "10.0.0.2"),
			p("security-opt", "no-new-privileges"), p("oom-score-adj", "100")), "", ""},
		{"cgroup-parent", secure, paramsTG(p("cgroup-parent", "/other")), f0, `"cgroup-parent"`},
		{"log-driver", secure, paramsTG(p("log-driver", "syslog")), f0, "--allow-privileged"},
		{"log-opt", secure, paramsTG(p("log-opt", "syslog-address=tcp://203.0.113.7:514")), f0, `"log-driver"`},
		{"negative oom score", secure, paramsTG(p("oom-score-adj", "-1000")), f0, `"oom-score-adj"`},
		{"oom kill disabled", secure, paramsTG(p("oom-kill-disable", "true")), f0, `"oom-score-adj"`},
		{"unlimited pids", secure, paramsTG(p("pids-limit", "-1")), f0, `"ulimit"`},
		{"apparmor profile", secure, paramsTG(p("security-opt", "apparmor=other")), f0, `"security-profile"`},
		{"selinux type", secure, paramsTG(p("security-opt", "label=type:spc_t")), f0, `"security-profile"`},
		{"ip", secure, paramsTG(p("ip", "10.0.0.9")), f0, `"docker-parameter"`},
		{"unknown parameter", secure, paramsTG(p("volume", "/:/host")), f0, `"docker-parameter"`},
		{"privileged node", privileged, paramsTG(p("cgroup-parent", "/x"), p("log-driver", "gelf"), p("oom-score-adj", "-5"),
			p("security-opt", "apparmor=other"), p("ulimit", "memlock=-1")), "", ""},

		// Ulimits, against the agent's own limits rather than admission's table.
		{"ulimit within", secure, paramsTG(p("ulimit", "nofile=4096:65536")), "", ""},
		{"ulimit lowered", secure, paramsTG(p("ulimit", "nofile=1024"), p("ulimit", "core=0")), "", ""},
		{"ulimit above the table, within the node", secure, paramsTG(p("ulimit", "core=1073741824")), "", ""},
		{"ulimit soft above", secure, paramsTG(p("ulimit", "nofile=8192:65536")), f0, "above this node's own limit 4096:65536"},
		{"ulimit hard above", secure, paramsTG(p("ulimit", "nofile=1024:1048576")), f0, "--allow-privileged"},
		{"memlock unlimited", secure, paramsTG(p("ulimit", "memlock=-1")), f0, "memlock=unlimited:unlimited is above this node's own limit 8388608:8388608"},
		{"rtprio", secure, paramsTG(p("ulimit", "rtprio=99")), f0, "rtprio=99:99"},
		{"ulimit unreadable", secure, paramsTG(p("ulimit", "msgqueue=1")), f0, "read this node's own limit"},
		{"ulimit unknown", secure, paramsTG(p("ulimit", "as=1")), f0, "cannot be judged"},
		{"ulimit second parameter", secure, paramsTG(p("label", "a=b"), p("ulimit", "nice=10")),
			"spec.template.spec.containers[0].parameters[1]", "nice="},
		{"ulimit privileged", privileged, paramsTG(p("ulimit", "nofile=-1")), "", ""},

		// Seccomp profiles, from the operator's list only.
		{"listed profile", bare.withSeccomp(profiles), paramsTG(p("security-opt", "seccomp=strict")), "", ""},
		{"runtime default", bare, paramsTG(p("security-opt", "seccomp=builtin"), p("security-opt", "seccomp=default")), "", ""},
		{"unlisted profile", secure, paramsTG(p("security-opt", "seccomp=other")), f0, `seccomp profile "other" is not among this node's profiles (its agent's --security-profiles: strict)`},
		{"no profiles", bare, paramsTG(p("security-opt", "seccomp=strict")), f0, "--security-profiles: none"},
		{"unlisted, privileged", privileged, paramsTG(p("security-opt", "seccomp=other")), f0, "not among"},
		{"inline profile", privileged, paramsTG(p("security-opt", `seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`)), f0, "inline or from a path is never run"},
		{"profile path", secure, paramsTG(p("security-opt", "seccomp=/etc/x.json")), f0, "inline or from a path"},
		{"unconfined", secure, paramsTG(p("security-opt", "seccomp=unconfined")), f0, `"unconfined"`},
		{"unconfined, privileged", privileged, paramsTG(p("security-opt", "seccomp=unconfined")), "", ""},
	})
}

func (g guard) withSeccomp(p map[string]string) guard {
	g.seccomp = p
	return g
}

// The node refuses every parameter it does not allow at once, each with its field.
func TestGuardReportsEveryParameter(t *testing.T) {
	g := guard{limits: fixedLimits}
	err := g.admit(paramsTG(v4.Parameter{Key: "cgroup-parent", Value: "/x"}, v4.Parameter{Key: "label", Value: "a=b"},
		v4.Parameter{Key: "ulimit", Value: "memlock=-1"}, v4.Parameter{Key: "security-opt", Value: "seccomp=x"}))
	if err == nil {
		t.Fatal("admitted")
	}
	for _, i := range []string{"0", "2", "3"} {
		if !strings.Contains(err.Error(), "spec.template.spec.containers[0].parameters["+i+"]: ") {
			t.Errorf("%v: parameter %s missing", err, i)
		}
	}
	if strings.Contains(err.Error(), "parameters[1]") {
		t.Errorf("%v: the label is harmless", err)
	}
}

// The agent's own limits are what the node reads without a test's: a ulimit equal to
// them passes, one above them does not.
func TestGuardOwnLimits(t *testing.T) {
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	if own.Max == unix.RLIM_INFINITY || own.Cur == unix.RLIM_INFINITY {
		t.Skip("nofile is unlimited here")
	}
	g := guard{}
	same := limitString(own.Cur) + ":" + limitString(own.Max)
	if err := g.admit(paramsTG(v4.Parameter{Key: "ulimit", Value: "nofile=" + same})); err != nil {
		t.Errorf("nofile=%s: %v", same, err)
	}
	above := limitString(own.Cur) + ":" + limitString(own.Max+1)
	if err := g.admit(paramsTG(v4.Parameter{Key: "ulimit", Value: "nofile=" + above})); err == nil {
		t.Errorf("nofile=%s admitted", above)
	}
}

func TestLoadSecurityProfiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	strict := write("strict.json", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}`)
	notJSON := write("bad.json", `defaultAction: allow`)
	noAction := write("empty.json", `{}`)
	got, err := loadSecurityProfiles([]string{" strict=" + strict + " ", "", "web.v2=" + strict})
	if err != nil || len(got) != 2 || got["strict"] != `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}` || got["web.v2"] == "" {
		t.Fatalf("%v %v", got, err)
	}
	for _, c := range []struct{ entry, want string }{
		{"strict", "want NAME=FILE"},
		{"strict=relative.json", "absolute path"},
		{"../x=" + strict, "the name must be"},
		{"default=" + strict, "not builtin, default or unconfined"},
		{"missing=" + filepath.Join(dir, "missing.json"), "no such file"},
		{"bad=" + notJSON, "not a seccomp profile"},
		{"empty=" + noAction, "no defaultAction"},
	} {
		if _, err := loadSecurityProfiles([]string{c.entry}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.entry, err, c.want)
		}
	}
	if _, err := loadSecurityProfiles([]string{"a=" + strict, "a=" + strict}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("twice: %v", err)
	}
}
