// Package params reads the values of Docker's run options as BCS container specs carry
// them (`parameters: [{key, value}]`), for every container driver: the Docker driver
// hands them to dockerd, the containerd driver turns them into the OCI spec, and both
// must read a value the same way and refuse the same bad ones.
package params

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	units "github.com/docker/go-units"

	"github.com/berthhq/berth/internal/driver"
)

// Key is a parameter's key without the dashes a spec may give it ("--cap-add").
func Key(k string) string { return strings.TrimLeft(k, "-") }

// MB reads a size as BCS writes them: a plain number is MB, a number with a unit (k, m,
// g, b) is taken as docker run does; -1 (when allowed) means unlimited.
func MB(v string, allowUnlimited bool) (int64, error) {
	if allowUnlimited && v == "-1" {
		return -1, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || f > math.MaxInt64/(1<<20) {
			return 0, fmt.Errorf("size out of range")
		}
		return int64(f * (1 << 20)), nil
	}
	n, err := units.RAMInBytes(v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("negative size")
	}
	return n, nil
}

// Bool reads a flag value; an empty value means true (a bare "--flag").
func Bool(v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	return strconv.ParseBool(v)
}

// IntRange reads an integer within [lo, hi].
func IntRange(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("out of range [%d, %d]", lo, hi)
	}
	return n, nil
}

// Device reads --device: host[:container[:permissions]], both paths absolute.
func Device(v string) (driver.Device, error) {
	parts := strings.Split(v, ":")
	m := driver.Device{HostPath: parts[0], ContainerPath: parts[0], Permissions: "rwm"}
	switch len(parts) {
	case 1:
	case 2:
		if Perms(parts[1]) {
			m.Permissions = parts[1]
		} else {
			m.ContainerPath = parts[1]
		}
	case 3:
		m.ContainerPath, m.Permissions = parts[1], parts[2]
	default:
		return m, fmt.Errorf("want host[:container[:rwm]]")
	}
	if !strings.HasPrefix(m.HostPath, "/") || !strings.HasPrefix(m.ContainerPath, "/") || !Perms(m.Permissions) {
		return m, fmt.Errorf("want host[:container[:rwm]]")
	}
	return m, nil
}

// Perms reports whether s is a device cgroup's permissions: r, w and m.
func Perms(s string) bool {
	return s != "" && strings.Trim(s, "rwm") == ""
}

// List splits a comma-separated value, so cap-add=NET_ADMIN,SYS_PTRACE works too.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Addrs parses IP addresses, as the API carries them; a bad one is an error naming it.
func Addrs(list []string) ([]netip.Addr, error) {
	out := make([]netip.Addr, 0, len(list))
	for _, s := range list {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, err
		}
		if a.Zone() != "" { // as the node's own servers: no scoped addresses
			return nil, fmt.Errorf("%s: an address with a zone is not a resolver address", s)
		}
		out = append(out, a)
	}
	return out, nil
}

// SetKV adds key=value to a map, creating it.
func SetKV(m *map[string]string, v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value")
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = val
	return nil
}

// ReservedLabel reports whether a label key belongs to berth (berth.*): a spec's label
// parameter may not set one, since berth finds and adopts its tasks by them.
func ReservedLabel(k string) bool { return strings.HasPrefix(k, "berth.") }
