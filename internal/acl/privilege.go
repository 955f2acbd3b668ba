package acl

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Workload privilege (docs/security.md, Workload privilege): what a workload may do to
// its node beyond its own sandbox is a right of its own. A rule grants privileges with
// its verbs (write), kinds and namespaces: `privileges: [host-network]`.
const (
	PrivPrivileged   = "privileged"    // containers[].privileged
	PrivHostNetwork  = "host-network"  // networkMode HOST, --net=host
	PrivHostPID      = "host-pid"      // --pid=host
	PrivHostIPC      = "host-ipc"      // --ipc=host
	PrivHostUTS      = "host-uts"      // --uts=host
	PrivHostUserns   = "host-userns"   // --userns=host
	PrivHostCgroupns = "host-cgroupns" // --cgroupns=host
	PrivCapAdd       = "cap-add"       // --cap-add
	PrivDevices      = "devices"       // --device
	PrivUnconfined   = "unconfined"    // --security-opt that turns seccomp, AppArmor or SELinux off
	PrivSysctl       = "sysctl"        // --sysctl
	PrivHostPath     = "host-path"     // a container volume from the host; a process's workPath, package outputDir or file at a literal path
	PrivRoot         = "root"          // a process running as root
	PrivFlexVolume   = "flex-volume"   // a pod volume a FlexVolume driver mounts: the node runs the driver as root with the spec's options
	PrivCSIPlugin    = "csi-plugin"    // a csiPlugin pod volume: the task group serves a CSI plugin to the node, with the agent's data dir
	// PrivExternalVolume is asked by a volume object rather than a workload: a volume
	// registered by its storage ID (spec.externalID) reaches storage berth did not create
	// for the namespace.
	PrivExternalVolume = "external-volume"
	// The docker parameters of params.go beyond the namespaces, capabilities and devices.
	PrivCgroupParent    = "cgroup-parent"    // --cgroup-parent: another cgroup than the container's own
	PrivLogDriver       = "log-driver"       // --log-driver, --log-opt: dockerd ships the logs where the spec says
	PrivOOMScoreAdj     = "oom-score-adj"    // a negative --oom-score-adj, --oom-kill-disable
	PrivUlimit          = "ulimit"           // --ulimit above the defaults; an unlimited pids-limit or memory-swap
	PrivSecurityProfile = "security-profile" // a --security-opt profile or label other than the defaults
	PrivParameter       = "docker-parameter" // a docker parameter that is none of the above and not known harmless
	// PrivPriority is asked by a workload or job naming a priority class above the
	// cluster's default (docs/policy.md, "Priorities and preemption").
	PrivPriority = "priority"
)

// Privileges lists every privilege.
var Privileges = []string{PrivPrivileged, PrivHostNetwork, PrivHostPID, PrivHostIPC, PrivHostUTS, PrivHostUserns,
	PrivHostCgroupns, PrivCapAdd, PrivDevices, PrivUnconfined, PrivSysctl, PrivHostPath, PrivRoot, PrivFlexVolume, PrivCSIPlugin, PrivExternalVolume,
	PrivCgroupParent, PrivLogDriver, PrivOOMScoreAdj, PrivUlimit, PrivSecurityProfile, PrivParameter, PrivPriority}

// Need is one privilege a workload asks for, and the field that asks. A host-path need
// carries the path on the node, and whether it is only read, so that a node's own
// allow-list can judge it too; a need of a docker parameter carries its key (without
// dashes), so that a node can judge a ulimit against its own limits.
type Need struct {
	Field, Privilege string
	Path             string
	ReadOnly         bool
	Param            string
}

// Needs lists the privileges of a pod spec, with the paths of the fields below base
// ("spec.template.spec").
func Needs(base string, p *v4.PodSpec) []Need {
	if p == nil {
		return nil
	}
	var out []Need
	add := func(field, priv string) { out = append(out, Need{Field: base + "." + field, Privilege: priv}) }
	addPath := func(field, p string, readOnly bool) {
		out = append(out, Need{Field: base + "." + field, Privilege: PrivHostPath, Path: p, ReadOnly: readOnly})
	}
	// item is one item of a process's configmap or secret: a file on the node's file
	// system when its path is, and the user it is written for.
	item := func(field, typ, keyOrPath, user string) {
		if typ == "file" && onHost(keyOrPath) {
			addPath(field+".keyOrPath", keyOrPath, false)
		}
		if IsRootUser(user) {
			add(field+".user", PrivRoot)
		}
	}
	// Processes run in the node's network by nature (their defaults say HOST): only a
	// container pod leaves its own network namespace for the node's.
	if strings.EqualFold(p.NetworkMode, "HOST") && len(p.Containers) > 0 {
		add("networkMode", PrivHostNetwork)
	}
	out = append(out, podVolumeNeeds(base, p)...)
	for i, c := range p.Containers {
		cp := fmt.Sprintf("containers[%d]", i)
		if c.Privileged {
			add(cp+".privileged", PrivPrivileged)
		}
		for j, prm := range c.Parameters {
			if priv := ParamPrivilege(prm.Key, prm.Value); priv != "" {
				out = append(out, Need{Field: fmt.Sprintf("%s.%s.parameters[%d]", base, cp, j), Privilege: priv, Param: ParamKey(prm.Key)})
			}
		}
		for j, v := range c.Volumes {
			if v.Volume.HostPath != "" {
				addPath(fmt.Sprintf("%s.volumes[%d].volume.hostPath", cp, j), v.Volume.HostPath, v.Volume.ReadOnly)
			}
		}
	}
	for i, t := range p.Processes {
		tp := fmt.Sprintf("processes[%d]", i)
		// A process without a user runs as its agent's --default-user, an unprivileged one
		// unless the node's operator chose otherwise (docs/agent.md, Workload privilege).
		if IsRootUser(t.User) {
			add(tp+".user", PrivRoot)
		}
		// A literal absolute path is the node's file system; ${workPath}/... stays in the
		// pod's work dir.
		if onHost(t.WorkPath) {
			addPath(tp+".workPath", t.WorkPath, false)
		}
		if onHost(t.PidFile) {
			addPath(tp+".pidFile", t.PidFile, false)
		}
		for j, u := range t.URIs {
			if onHost(u.OutputDir) {
				addPath(fmt.Sprintf("%s.uris[%d].outputDir", tp, j), u.OutputDir, false)
			}
			// A file:// package is read by the agent, as root, from the node.
			if p, ok := fileURIPath(u.Value); ok {
				addPath(fmt.Sprintf("%s.uris[%d].value", tp, j), p, true)
			}
		}
		for j, cm := range t.ConfigMaps {
			for k, it := range cm.Items {
				item(fmt.Sprintf("%s.configmaps[%d].items[%d]", tp, j, k), it.Type, it.KeyOrPath, it.User)
			}
		}
		for j, sec := range t.Secrets {
			for k, it := range sec.Items {
				item(fmt.Sprintf("%s.secrets[%d].items[%d]", tp, j, k), it.Type, it.KeyOrPath, it.User)
			}
		}
	}
	return out
}

// podVolumeNeeds are the privileges of the pod's volumes: a FlexVolume's driver runs as
// root on the node with the spec's options (a server, a share, a device), which may
// reach anything the driver can; a csiPlugin volume makes the task group a CSI plugin
// of the node, which the agent hands volumes' secrets and whose containers get the
// agent's data dir (every pod's volumes) with mounts propagating to the node.
func podVolumeNeeds(base string, p *v4.PodSpec) []Need {
	var out []Need
	for i, v := range p.Volumes {
		if v.FlexVolume != nil {
			out = append(out, Need{Field: fmt.Sprintf("%s.volumes[%d].flexVolume", base, i), Privilege: PrivFlexVolume})
		}
		if v.CSIPlugin != nil {
			out = append(out, Need{Field: fmt.Sprintf("%s.volumes[%d].csiPlugin", base, i), Privilege: PrivCSIPlugin})
		}
	}
	return out
}

// IsRootUser reports whether a process's user is spelled as root: the name root, or a
// number that is 0 however it is written ("0", "00"). Another name of uid 0 on some node
// ("toor") is that node's to refuse (docs/security.md, "Users").
func IsRootUser(u string) bool {
	u = strings.TrimSpace(u)
	if u == "root" {
		return true
	}
	return u != "" && strings.Trim(u, "0") == ""
}

// fileURIPath returns the path of a file:// URL.
func fileURIPath(v string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || !strings.EqualFold(u.Scheme, "file") {
		return "", false
	}
	if u.Path == "" {
		return "/", true // file:relative or file:// alone: judged as the whole node
	}
	return u.Path, true
}

// onHost reports whether a process's path is a literal place on the node ("/data/x"),
// rather than one under its pod's directories ("${workPath}/x", or a relative one).
func onHost(p string) bool { return path.IsAbs(p) }
