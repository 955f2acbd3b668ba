package acl

import (
	"math"

	units "github.com/docker/go-units"
)

// A container's ulimits are inherited from dockerd unless a `ulimit` parameter sets
// them, and the kernel lets a process raise a limit only up to its hard one: a ulimit
// above the node's defaults hands the container what its node did not (memlock=-1 pins
// memory without bound, nice and rtprio take CPU from every other process). Admission
// does not know the node, so it judges against ulimitCeilings, a conservative table of
// what any node gives; each node then judges against its own limits (the agent's, see
// internal/agent/guard_params.go).

// Unlimited is a ulimit of -1, or any negative value: Docker passes it on as the
// kernel's RLIM_INFINITY (the value's two's complement).
const Unlimited uint64 = math.MaxUint64

// Ulimit is a parsed `ulimit` parameter, negative values read as Unlimited.
type Ulimit struct {
	Name       string
	Soft, Hard uint64
}

// ParseUlimit reads a `ulimit` value (name=soft[:hard]) with the driver's own parser, so
// that what is judged is what Docker is given.
func ParseUlimit(v string) (Ulimit, error) {
	u, err := units.ParseUlimit(v)
	if err != nil {
		return Ulimit{}, err
	}
	return Ulimit{Name: u.Name, Soft: rlim(u.Soft), Hard: rlim(u.Hard)}, nil
}

func rlim(n int64) uint64 {
	if n < 0 {
		return Unlimited
	}
	return uint64(n)
}

// ulimitCeilings are the highest soft and hard limits a workload may ask without the
// ulimit privilege. Where the kernel's and Docker's default is unlimited (cpu, data,
// fsize, locks, nproc, rss, rttime, sigpending, stack: the resource is bounded by the
// container's cgroup, or root in a container is exempt from it), any finite value only
// lowers it; elsewhere the ceiling is the kernel's default for a process.
var ulimitCeilings = map[string]uint64{
	// Core dumps may be piped to the node's handler (kernel.core_pattern) and kept on
	// the node's disk, outside the container's.
	"core": 0,
	// Locked memory cannot be reclaimed; 8 MiB is the kernel's default since 5.16.
	"memlock": 8 << 20,
	// POSIX message queues' bytes: the kernel's default.
	"msgqueue": 819200,
	// A nice ceiling above 0 lets processes take priority over the node's; an rtprio
	// above 0 lets them run real-time and starve it.
	"nice":   0,
	"rtprio": 0,
	// Docker's and containerd's usual default, and the kernel's fs.nr_open.
	"nofile": 1 << 20,

	"cpu": math.MaxInt64, "data": math.MaxInt64, "fsize": math.MaxInt64, "locks": math.MaxInt64,
	"nproc": math.MaxInt64, "rss": math.MaxInt64, "rttime": math.MaxInt64, "sigpending": math.MaxInt64,
	"stack": math.MaxInt64,
}

// ulimitPrivilege judges a `ulimit` parameter against ulimitCeilings: unlimited, above
// the ceiling, a name Docker does not know, or a value that does not parse needs
// PrivUlimit.
func ulimitPrivilege(v string) string {
	u, err := ParseUlimit(v)
	if err != nil {
		return PrivUlimit
	}
	ceiling, ok := ulimitCeilings[u.Name]
	if !ok || u.Soft == Unlimited || u.Hard == Unlimited || u.Soft > ceiling || u.Hard > ceiling {
		return PrivUlimit
	}
	return ""
}
