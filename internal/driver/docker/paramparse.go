package docker

import (
	"fmt"
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
