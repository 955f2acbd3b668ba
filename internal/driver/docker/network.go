package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/berthhq/berth/internal/driver"
)

// setupNetwork sets the task's network on its container: joining another container's
// namespace (JoinTask), or HOST, BRIDGE, NONE or a user network, with the port
// bindings and hostname where the mode allows them. An unknown user network is an
// error naming it (Docker's own message does not say which parameter was wrong).
func (d *Driver) setupNetwork(ctx context.Context, t *driver.Task, x paramExtras, cfg *container.Config, hc *container.HostConfig) (*network.NetworkingConfig, error) {
	if t.Setup.JoinTask != "" {
		target, err := d.resolveJoin(ctx, t.Setup.JoinTask)
		if err != nil {
			return nil, err
		}
		// Hostname, ports and IP belong to the container that owns the namespace;
		// Docker refuses them here.
		hc.NetworkMode = container.NetworkMode("container:" + target)
		return nil, nil
	}
	mode := t.Setup.NetworkMode
	switch strings.ToUpper(mode) {
	case "HOST", "BRIDGE", "NONE":
		mode = strings.ToLower(mode)
	case "USER":
		if x.net == "" {
			return nil, errors.New("network mode USER needs the net parameter naming the network")
		}
		mode = x.net
	case "":
		// BCS: an empty mode is Docker NONE, unless the net parameter names one.
		mode = "none"
		if x.net != "" {
			mode = x.net
		}
	}
	if strings.EqualFold(mode, "default") {
		mode = "bridge"
	}
	hc.NetworkMode = container.NetworkMode(mode)
	user := mode != "host" && mode != "bridge" && mode != "none"
	var nc *network.NetworkingConfig
	if user {
		if _, err := d.cli.NetworkInspect(ctx, mode, network.InspectOptions{}); err != nil {
			if cerrdefs.IsNotFound(err) {
				return nil, fmt.Errorf("network %q not found (create it with docker network create, or use HOST, BRIDGE or NONE)", mode)
			}
			return nil, d.wrap(err, "network %q", mode)
		}
		if x.ip != "" {
			nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
				mode: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: x.ip}},
			}}
		}
	} else if x.ip != "" {
		return nil, fmt.Errorf("parameter ip=%s needs a user network, not %s", x.ip, mode)
	}
	if mode == "host" || mode == "none" {
		if len(t.Setup.PortBindings) > 0 {
			d.log.Debug("port bindings ignored in this network mode", "task", t.ID, "mode", mode)
		}
	} else if err := bindPorts(t.Setup.PortBindings, cfg, hc); err != nil {
		return nil, err
	}
	if mode != "host" {
		cfg.Hostname = t.Setup.Hostname
	}
	return nc, nil
}

// bindPorts publishes the pod's port mappings; a mapping with host port 0 (or less) is
// not published (BCS drops them).
func bindPorts(pbs []driver.PortBinding, cfg *container.Config, hc *container.HostConfig) error {
	for _, pb := range pbs {
		if pb.HostPort <= 0 {
			continue
		}
		proto := strings.ToLower(pb.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		if proto != "tcp" && proto != "udp" && proto != "sctp" {
			return fmt.Errorf("port %s: protocol %q is not tcp, udp or sctp", pb.Name, pb.Protocol)
		}
		if pb.ContainerPort < 1 || pb.ContainerPort > 65535 || pb.HostPort > 65535 {
			return fmt.Errorf("port %s: container port %d or host port %d out of range", pb.Name, pb.ContainerPort, pb.HostPort)
		}
		p, err := nat.NewPort(proto, strconv.Itoa(pb.ContainerPort))
		if err != nil {
			return fmt.Errorf("port %s: %w", pb.Name, err)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = nat.PortSet{}
			hc.PortBindings = nat.PortMap{}
		}
		cfg.ExposedPorts[p] = struct{}{}
		hc.PortBindings[p] = append(hc.PortBindings[p], nat.PortBinding{HostPort: strconv.Itoa(pb.HostPort)})
	}
	return nil
}

// resolveJoin finds the container whose network a task joins: a task (by its ID) or a
// CNI sandbox (by the ID SetupPod returned). Only berth's containers of the driver's
// owner can be joined (owner.go).
func (d *Driver) resolveJoin(ctx context.Context, ref string) (string, error) {
	for _, name := range []string{d.name(ref), ref} {
		if !validID(strings.TrimPrefix(name, "berth-")) {
			continue
		}
		c, err := d.cli.ContainerInspect(ctx, name)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", d.wrap(err, "network of %s to join", ref)
		}
		if c.Config == nil || (c.Config.Labels[LabelID] == "" && c.Config.Labels[LabelPod] == "") || !d.owns(c) {
			continue
		}
		if c.State == nil || !c.State.Running {
			return "", fmt.Errorf("network of %s to join: the container is not running (%s)", ref, stateString(c.State))
		}
		return c.ID, nil
	}
	return "", fmt.Errorf("network of %s to join: no such task or pod sandbox", ref)
}
