package docker

import (
	"context"
	"slices"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/logfile"
)

// rotatingLogDrivers are Docker's log drivers that keep a container's log in files on
// the node and bound them with max-size and max-file.
var rotatingLogDrivers = []string{"json-file", "local"}

// applyLogLimits bounds the log of a container whose spec sets no log driver and no log
// option, when the daemon's default driver (daemonDriver) is one of rotatingLogDrivers:
// json-file keeps every byte by default, and a tenant's chatty container must not fill
// the node's disk. A spec's own log-driver or log-opt (a privilege the node's guard
// judges) is left as it is, as is a daemon logging elsewhere.
func applyLogLimits(hc *container.HostConfig, daemonDriver string, lim logfile.Limits) {
	if hc.LogConfig.Type != "" || len(hc.LogConfig.Config) > 0 || !lim.Rotates() {
		return
	}
	if !slices.Contains(rotatingLogDrivers, daemonDriver) {
		return
	}
	// The type stays unset (the daemon's default); the options given replace the
	// daemon's own defaults of the same names (daemon.json's log-opts).
	hc.LogConfig.Config = map[string]string{
		"max-size": strconv.FormatInt(lim.MaxBytes, 10), // bytes: Docker reads a bare number so
		"max-file": strconv.Itoa(lim.MaxFiles),
	}
}

// daemonLogDriver returns the daemon's default log driver (docker info's LoggingDriver),
// asked once; "" while the daemon does not answer (asked again at the next start).
func (d *Driver) daemonLogDriver(ctx context.Context) string {
	d.logDriverMu.Lock()
	defer d.logDriverMu.Unlock()
	if d.logDriver != nil {
		return *d.logDriver
	}
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		d.log.Warn("docker info: the daemon's log driver is not known; this container's log is not bounded", "err", err)
		return ""
	}
	name := res.Info.LoggingDriver
	d.logDriver = &name
	return name
}
