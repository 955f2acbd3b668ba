package agent

import (
	"context"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/driver/docker"
	"github.com/berthhq/berth/internal/driver/process"
)

// Docker modes (Config.Docker).
const (
	DockerAuto = "auto" // use Docker when the daemon answers at start
	DockerOn   = "on"   // always: container pods fail with the daemon's error while it is down
	DockerOff  = "off"  // never: container pods fail with "no docker driver on this node"
)

// Container runtimes (Config.ContainerRuntime): the driver that fills the container slot
// (driver.KindDocker). The node reports it as its AttrContainerRuntime text attribute.
const (
	RuntimeDocker     = "docker"
	RuntimeContainerd = "containerd"
	// AttrContainerRuntime is the node's text attribute naming its container runtime,
	// set while a container driver is open, so constraints can place on it.
	AttrContainerRuntime = "berth.io/container-runtime"
)

// dockerProbeTimeout bounds the check of DockerAuto.
const dockerProbeTimeout = 5 * time.Second

// openDrivers uses the configured drivers, or opens the process driver under
// DataDir/process and, per Config.Docker, the Docker driver under DataDir/docker; the
// returned func closes what was opened here.
func (a *Agent) openDrivers(ctx context.Context) (func(), error) {
	if a.cfg.Drivers != nil {
		a.drivers = a.cfg.Drivers
		return func() {}, nil
	}
	user, uids, err := a.taskUser()
	if err != nil {
		return nil, err
	}
	var volumes []string
	for _, v := range a.guard.volumes {
		volumes = append(volumes, v.dir)
	}
	p, err := process.New(process.Config{DataDir: filepath.Join(a.cfg.DataDir, "process"), Logger: a.log, CgroupParent: a.cfg.CgroupParent,
		RootCAs: []*x509.Certificate{a.id.ca}, DefaultUser: user, DynamicUIDs: uids,
		HostVolumes: volumes, Protected: a.guard.protected, Owner: a.owner, LogLimits: a.cfg.LogLimits})
	if err != nil {
		return nil, fmt.Errorf("agent: process driver: %w", err)
	}
	closers := []func() error{p.Close}
	closeAll := func() {
		for _, c := range closers {
			if err := c(); err != nil {
				a.log.Warn("close a driver", "err", err)
			}
		}
	}
	a.drivers = map[string]driver.Driver{p.Name(): p}
	if a.cfg.ContainerRuntime == RuntimeContainerd {
		c, err := a.openContainerd()
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, c.Close)
		a.drivers[c.Name()] = c
		a.containerRuntime, a.containerRuntimes = RuntimeContainerd, c.Runtimes()
		return closeAll, nil
	}
	d, err := a.openDocker(ctx)
	if err != nil {
		closeAll()
		return nil, err
	}
	if d != nil {
		closers = append(closers, d.Close)
		a.drivers[d.Name()] = d
		a.containerRuntime, a.containerRuntimes = RuntimeDocker, a.dockerRuntimes(ctx, d)
	}
	return closeAll, nil
}

// openContainerd opens the containerd driver under DataDir/containerd, in the container
// slot. It does not probe the daemon: while it is down, container task groups fail with
// its error, as with --docker on.
func (a *Agent) openContainerd() (*containerd.Driver, error) {
	handlers, err := containerdHandlers(a.cfg.ContainerRuntimes)
	if err != nil {
		return nil, fmt.Errorf("agent: --container-runtimes: %w", err)
	}
	d, err := containerd.New(containerd.Config{
		Address: a.cfg.ContainerdAddress, CertsDir: a.cfg.ContainerdCerts, Logger: a.log.With("driver", "containerd"),
		DataDir: filepath.Join(a.cfg.DataDir, "containerd"), Owner: a.owner, LogLimits: a.cfg.LogLimits,
		Runtimes:  handlers,
		CNIBinDir: a.cfg.CNIBinDir, CNIConfDir: a.cfg.CNIConfDir, NetworkImage: a.cfg.NetworkImage,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: containerd driver: %w", err)
	}
	a.log.Info("containerd driver on", "address", a.cfg.ContainerdAddress, "runtimes", d.Runtimes(), "default", d.DefaultRuntime())
	return d, nil
}

// openDocker opens the Docker driver per Config.Docker: nil when it is off, or when it
// is auto and the daemon does not answer (the node then runs processes only).
func (a *Agent) openDocker(ctx context.Context) (*docker.Driver, error) {
	mode := a.cfg.Docker
	if mode == DockerOff {
		a.log.Info("docker driver off: container task groups fail on this node")
		return nil, nil
	}
	d, err := docker.New(docker.Config{
		Host: a.cfg.DockerHost, Logger: a.log.With("driver", "docker"), DataDir: filepath.Join(a.cfg.DataDir, "docker"),
		CNIBinDir: a.cfg.CNIBinDir, CNIConfDir: a.cfg.CNIConfDir, NetworkImage: a.cfg.NetworkImage,
		SeccompProfiles: a.guard.seccomp, Owner: a.owner, LogLimits: a.cfg.LogLimits,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: docker driver: %w", err)
	}
	if mode == DockerOn {
		return d, nil
	}
	pctx, cancel := context.WithTimeout(ctx, dockerProbeTimeout)
	defer cancel()
	if _, err := d.List(pctx); err != nil {
		a.log.Warn("docker driver off: the daemon does not answer (--docker=on to use it anyway)", "err", err)
		if err := d.Close(); err != nil {
			a.log.Warn("close the docker driver", "err", err)
		}
		return nil, nil
	}
	a.log.Info("docker driver on")
	return d, nil
}

// podLister is a driver with pod networks that can list them (the Docker driver's PodIDs),
// so sandboxes left by task groups deleted while the agent was away are torn down.
type podLister interface {
	PodIDs(ctx context.Context) ([]string, error)
}

// podNetworkKeys returns the task group keys ("ns/name") of the pod networks the drivers
// hold. A driver that cannot list them is skipped: the sandboxes wait for the next
// reconcile, which is no reason to hold up the rest.
func (a *Agent) podNetworkKeys(ctx context.Context) []string {
	var keys []string
	for _, name := range sortedKeys(a.drivers) {
		pl, ok := a.drivers[name].(podLister)
		if !ok {
			continue
		}
		ids, err := pl.PodIDs(ctx)
		if err != nil {
			a.log.Warn("list pod networks", "driver", name, "err", err)
			continue
		}
		for _, id := range ids {
			// Pod IDs are "{namespace}.{name}"; namespaces have no dots.
			if ns, n, ok := strings.Cut(id, "."); ok {
				keys = append(keys, tgKey(ns, n))
			}
		}
	}
	return keys
}
