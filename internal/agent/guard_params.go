package agent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

// The docker parameters a node judges by itself (docs/agent.md, "Workload privilege").
// Admission judged ulimits against a fixed table, not knowing the node; the node knows
// its own limits: a ulimit that raises a soft or hard limit above the agent's own (what
// the node's operator gave its services) needs --allow-privileged, one within them runs
// whatever admission thought. A seccomp profile is a name the node resolves from its
// operator's list (--security-profiles): a name not on it, an inline profile or a path is
// refused, --allow-privileged or not, since the node has nothing it could run instead.

// rlimits maps Docker's ulimit names to the kernel's resources.
var rlimits = map[string]int{
	"core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU, "data": unix.RLIMIT_DATA, "fsize": unix.RLIMIT_FSIZE,
	"locks": unix.RLIMIT_LOCKS, "memlock": unix.RLIMIT_MEMLOCK, "msgqueue": unix.RLIMIT_MSGQUEUE,
	"nice": unix.RLIMIT_NICE, "nofile": unix.RLIMIT_NOFILE, "nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS,
	"rtprio": unix.RLIMIT_RTPRIO, "rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING,
	"stack": unix.RLIMIT_STACK,
}

// admitParams checks the container parameters the node judges itself: ulimits and
// seccomp profiles. Every refusal names its field.
func (g guard) admitParams(spec *v4.PodSpec) []error {
	var errs []error
	for i, c := range spec.Containers {
		for j, p := range c.Parameters {
			field := fmt.Sprintf("spec.template.spec.containers[%d].parameters[%d]", i, j)
			var err error
			switch acl.ParamKey(p.Key) {
			case "ulimit":
				err = g.allowUlimit(field, strings.TrimSpace(p.Value))
			case "security-opt":
				err = g.allowSeccomp(field, strings.TrimSpace(p.Value))
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// allowUlimit refuses, without --allow-privileged, a ulimit above the agent's own limits
// or one it cannot judge.
func (g guard) allowUlimit(field, v string) error {
	if g.privileged {
		return nil
	}
	u, err := acl.ParseUlimit(v)
	if err != nil {
		return fmt.Errorf("%s: ulimit %q cannot be judged (%v); this node runs it only with --allow-privileged", field, v, err)
	}
	res, ok := rlimits[u.Name]
	if !ok {
		return fmt.Errorf("%s: ulimit %q names a limit this node does not know; it runs it only with --allow-privileged", field, v)
	}
	own, err := g.rlimit(res)
	if err != nil {
		return fmt.Errorf("%s: ulimit %s: read this node's own limit: %w", field, u.Name, err)
	}
	if u.Soft > own.Cur || u.Hard > own.Max {
		return fmt.Errorf("%s: ulimit %s=%s:%s is above this node's own limit %s:%s (its agent's); this node raises limits only with --allow-privileged",
			field, u.Name, limitString(u.Soft), limitString(u.Hard), limitString(own.Cur), limitString(own.Max))
	}
	return nil
}

// rlimit reads one of the agent's own limits.
func (g guard) rlimit(res int) (unix.Rlimit, error) {
	if g.limits != nil {
		return g.limits(res)
	}
	var l unix.Rlimit
	err := unix.Getrlimit(res, &l)
	return l, err
}

func limitString(n uint64) string {
	if n == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(n, 10)
}

// allowSeccomp refuses a seccomp profile the node cannot name: anything but unconfined
// (a privilege of its own, judged with the others), the runtime's default, or a profile
// of --security-profiles.
func (g guard) allowSeccomp(field, v string) error {
	k, val, ok := acl.SplitSecurityOpt(v)
	if !ok || k != "seccomp" {
		return nil
	}
	switch val {
	case "unconfined", acl.SeccompBuiltin, acl.SeccompDefault:
		return nil
	}
	if _, listed := g.seccomp[val]; listed {
		return nil
	}
	names := "none"
	if len(g.seccomp) > 0 {
		var list []string
		for n := range g.seccomp {
			list = append(list, n)
		}
		slices.Sort(list)
		names = strings.Join(list, ",")
	}
	if !acl.ValidProfileName(val) {
		return fmt.Errorf("%s: a seccomp profile inline or from a path is never run; name one of this node's profiles (its agent's --security-profiles: %s)", field, names)
	}
	return fmt.Errorf("%s: seccomp profile %q is not among this node's profiles (its agent's --security-profiles: %s)", field, val, names)
}
