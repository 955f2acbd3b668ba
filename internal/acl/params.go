package acl

import (
	"strconv"
	"strings"

	units "github.com/docker/go-units"
)

// Docker parameters are an allow-list (docs/security.md, "Workload privilege"): a
// container's `parameters` reach dockerd as they are, and many of them act beyond the
// container's sandbox (its cgroup, its logs' destination, the node's OOM killer, its
// limits, its security profiles). Each parameter the Docker driver knows
// (internal/driver/docker/params.go) is judged here, by its value where that decides;
// a parameter that is not in the table needs PrivParameter, so that a key berth learns
// later is a privilege until someone decides otherwise.

// paramJudge returns the privilege a parameter's value needs, or "" when it needs none.
// The value is trimmed of spaces, as the driver trims it.
type paramJudge func(v string) string

// harmless is a parameter that only shapes the container's own sandbox.
func harmless(string) string { return "" }

// always is a parameter that needs priv whatever its value.
func always(priv string) paramJudge { return func(string) string { return priv } }

// paramJudges holds every parameter of the Docker driver. The reasons a parameter needs
// nothing are given per group; a change of the driver's table must add its key here
// (TestParamsCoverTheDriver in internal/driver/docker checks it).
var paramJudges = map[string]paramJudge{
	// Namespaces: "host" shares the node's, "container:<name>" joins another container's,
	// which may be another namespace's workload (berth joins a pod's own containers
	// itself, never through a parameter). Any other value is the container's own
	// namespace (private, shareable, none) or a network the node's operator created.
	"net":      sharedMode(PrivHostNetwork),
	"network":  sharedMode(PrivHostNetwork),
	"pid":      sharedMode(PrivHostPID),
	"ipc":      sharedMode(PrivHostIPC),
	"uts":      sharedMode(PrivHostUTS),
	"userns":   sharedMode(PrivHostUserns),
	"cgroupns": sharedMode(PrivHostCgroupns),

	"cap-add":       always(PrivCapAdd),
	"device":        always(PrivDevices),
	"sysctl":        always(PrivSysctl),
	"security-opt":  securityOptPrivilege,
	"cgroup-parent": always(PrivCgroupParent), // the container would run in (and be charged to) a cgroup of the spec's choice
	// dockerd itself ships the logs: a driver such as syslog, gelf or fluentd dials an
	// address of the spec's choosing from the node, whatever the container's network.
	"log-driver": always(PrivLogDriver),
	"log-opt":    always(PrivLogDriver),
	// A negative score, or no OOM kill at all, makes the node's OOM killer take others'
	// processes instead of the container's.
	"oom-score-adj":    oomScorePrivilege,
	"oom-kill-disable": flagPrivilege(PrivOOMScoreAdj),
	"ulimit":           ulimitPrivilege,
	// Unlimited (pids-limit 0 or -1, memory-swap -1) lifts what the node's daemon bounds
	// by default; a finite value only sizes the container's own cgroup.
	"pids-limit":  pidsLimitPrivilege,
	"memory-swap": memorySwapPrivilege,
	// Addresses of the spec's choosing reach beyond the container: P publishes every
	// exposed port on host ports outside the scheduler's accounting; ip and mac-address
	// can take another workload's or machine's address on a shared network (Docker
	// checks neither against other nodes, nor a MAC against anything).
	"P":           flagPrivilege(PrivParameter),
	"ip":          always(PrivParameter),
	"mac-address": always(PrivParameter),

	// Resources of the container's own cgroup, charged to it: memory and CPU knobs,
	// CPU and memory node pinning (the CFS quota still bounds the CPU time), I/O
	// weights and throttles of its own I/O, /dev/shm and tmpfs sizes (tmpfs pages are
	// charged to the memory cgroup of the writer). cpu-rt-runtime only reserves
	// real-time time for the cgroup: running real-time needs CAP_SYS_NICE (cap-add) or
	// an rtprio ulimit above 0 (ulimit).
	"memory-reservation": harmless,
	"memory-swappiness":  harmless,
	"shm-size":           harmless,
	"tmpfs":              harmless,
	"cpuset":             harmless,
	"cpuset-cpus":        harmless,
	"cpuset-mems":        harmless,
	"blkio-weight":       harmless,
	"device-read-bps":    harmless,
	"device-write-bps":   harmless,
	"device-read-iops":   harmless,
	"device-write-iops":  harmless,
	"cpu-rt-runtime":     harmless,
	// The container's own name resolution: its resolv.conf and hosts file.
	"dns":        harmless,
	"dns-search": harmless,
	"dns-option": harmless,
	"add-host":   harmless,
	// Who runs inside the container: its user (root in a container is the default
	// anyway) and supplementary groups, which reach only what the container can reach
	// (files from the host need host-path, devices need devices). cap-drop only drops.
	"user":      harmless,
	"group-add": harmless,
	"cap-drop":  harmless,
	// The container's own lifecycle and metadata: labels (the driver refuses berth.*),
	// its stop signal, an init process, a read-only root, removal (berth removes
	// containers itself and ignores rm).
	"label":       harmless,
	"stop-signal": harmless,
	"init":        harmless,
	"read-only":   harmless,
	"rm":          harmless,
}

// ParamKey is a parameter's key as the driver reads it: without its leading dashes.
func ParamKey(key string) string { return strings.TrimLeft(key, "-") }

// ParamPrivilege returns the privilege a docker parameter needs, or "" when it needs
// none. A key the table does not know needs PrivParameter.
func ParamPrivilege(key, value string) string {
	judge, ok := paramJudges[ParamKey(key)]
	if !ok {
		return PrivParameter
	}
	return judge(strings.TrimSpace(value))
}

// KnownParam reports whether key (with or without dashes) is judged by the table.
func KnownParam(key string) bool {
	_, ok := paramJudges[ParamKey(key)]
	return ok
}

// sharedMode judges a namespace mode: "host" or "container:<name>" needs priv. The
// value is compared in lower case, so that "HOST" is judged as the host even where
// Docker would take it for the name of a network.
func sharedMode(priv string) paramJudge {
	return func(v string) string {
		v = strings.ToLower(v)
		if v == "host" || strings.HasPrefix(v, "container:") {
			return priv
		}
		return ""
	}
}

// flagPrivilege is a boolean parameter that needs priv when set (a bare key is true, as
// the driver reads it); only a value that reads as false needs nothing.
func flagPrivilege(priv string) paramJudge {
	return func(v string) string {
		if b, err := strconv.ParseBool(v); err == nil && !b {
			return ""
		}
		return priv
	}
}

// oomScorePrivilege: 0 to 1000 only makes the container a likelier victim.
func oomScorePrivilege(v string) string {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return ""
	}
	return PrivOOMScoreAdj
}

// pidsLimitPrivilege: Docker reads 0 and negative numbers as no limit at all.
func pidsLimitPrivilege(v string) string {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return ""
	}
	return PrivUlimit
}

// memorySwapPrivilege: -1 is unlimited swap. A size is read as the driver reads it (a
// plain number is MB, or a size with a unit); one that does not read as a size that is
// not negative cannot be judged.
func memorySwapPrivilege(v string) string {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f >= 0 { // false for NaN too
			return ""
		}
		return PrivUlimit
	}
	if n, err := units.RAMInBytes(v); err == nil && n >= 0 {
		return ""
	}
	return PrivUlimit
}
