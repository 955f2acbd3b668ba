package docker

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
	"github.com/moby/moby/api/types/blkiodev"
	"github.com/moby/moby/api/types/container"
)

type throttles = []*blkiodev.ThrottleDevice

// throttle is a device-read/write-bps/iops parameter: /dev/x:limit. A bps limit takes
// units (kb, mb, gb; a plain number is bytes, as in docker run); iops a plain count.
func throttle(field func(*container.HostConfig) *throttles, bytes bool) paramFunc {
	return func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		path, limit, ok := strings.Cut(v, ":")
		if !ok || !strings.HasPrefix(path, "/dev/") || limit == "" {
			return fmt.Errorf("want /dev/<device>:<limit>")
		}
		var rate uint64
		if bytes {
			n, err := units.RAMInBytes(limit)
			if err != nil || n < 0 {
				return fmt.Errorf("bad rate %q", limit)
			}
			rate = uint64(n)
		} else {
			n, err := strconv.ParseUint(limit, 10, 64)
			if err != nil {
				return fmt.Errorf("bad count %q", limit)
			}
			rate = n
		}
		f := field(hc)
		*f = append(*f, &blkiodev.ThrottleDevice{Path: path, Rate: rate})
		return nil
	}
}

// parseMB reads a size as BCS writes them: a plain number is MB, a number with a unit
// (k, m, g, b) is taken as docker run does; -1 (when allowed) means unlimited.
func parseMB(v string, allowUnlimited bool) (int64, error) {
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

// parseBool reads a flag value; an empty value means true (a bare "--flag").
func parseBool(v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	return strconv.ParseBool(v)
}

func parseIntRange(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("out of range [%d, %d]", lo, hi)
	}
	return n, nil
}

// parseDevice reads --device: host[:container[:permissions]].
func parseDevice(v string) (container.DeviceMapping, error) {
	parts := strings.Split(v, ":")
	m := container.DeviceMapping{PathOnHost: parts[0], PathInContainer: parts[0], CgroupPermissions: "rwm"}
	switch len(parts) {
	case 1:
	case 2:
		if isPerms(parts[1]) {
			m.CgroupPermissions = parts[1]
		} else {
			m.PathInContainer = parts[1]
		}
	case 3:
		m.PathInContainer, m.CgroupPermissions = parts[1], parts[2]
	default:
		return m, fmt.Errorf("want host[:container[:rwm]]")
	}
	if !strings.HasPrefix(m.PathOnHost, "/") || !strings.HasPrefix(m.PathInContainer, "/") || !isPerms(m.CgroupPermissions) {
		return m, fmt.Errorf("want host[:container[:rwm]]")
	}
	return m, nil
}

func isPerms(s string) bool {
	return s != "" && strings.Trim(s, "rwm") == ""
}

// splitList splits a comma-separated value, so cap-add=NET_ADMIN,SYS_PTRACE works too.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseAddrs parses IP addresses, as the API carries them; a bad one is an error naming it.
func parseAddrs(list []string) ([]netip.Addr, error) {
	out := make([]netip.Addr, 0, len(list))
	for _, s := range list {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, err
		}
		if a.Zone() != "" { // as the node's own servers (applyDNS): no scoped addresses
			return nil, fmt.Errorf("%s: an address with a zone is not a resolver address", s)
		}
		out = append(out, a)
	}
	return out, nil
}

// setKV adds key=value to a map, creating it.
func setKV(m *map[string]string, v string) error {
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
