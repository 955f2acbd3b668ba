package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

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
		// Hostname, ports, IP and MAC belong to the container that owns the namespace;
		// Docker refuses them here.
		if x.mac != nil {
			return nil, errMACNetworkMode
		}
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
	if user {
		if _, err := d.cli.NetworkInspect(ctx, mode, client.NetworkInspectOptions{}); err != nil {
			if cerrdefs.IsNotFound(err) {
				return nil, fmt.Errorf("network %q not found (create it with docker network create, or use HOST, BRIDGE or NONE)", mode)
			}
			return nil, d.wrap(err, "network %q", mode)
		}
	}
	nc, err := endpointConfig(mode, user, x)
	if err != nil {
		return nil, err
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

// errMACNetworkMode is Docker's refusal of a MAC address for a container that has the
// host's or another container's network.
var errMACNetworkMode = errors.New("conflicting options: mac-address and the network mode")

// endpointConfig is the container's settings on its network mode: the static IP (ip,
// a user network only) and the MAC address (mac-address: refused with the host's
// network, as Docker does, and without effect with none); nil when neither applies.
func endpointConfig(mode string, user bool, x paramExtras) (*network.NetworkingConfig, error) {
	if mode == "host" && x.mac != nil {
		return nil, errMACNetworkMode
	}
	if mode == "none" {
		x.mac = nil
	}
	if x.ip == "" && x.mac == nil {
		return nil, nil
	}
	var ep network.EndpointSettings
	if x.ip != "" {
		if !user {
			return nil, fmt.Errorf("parameter ip=%s needs a user network, not %s", x.ip, mode)
		}
		ip, err := netip.ParseAddr(x.ip)
		if err != nil {
			return nil, fmt.Errorf("parameter ip=%s: %w", x.ip, err)
		}
		if !ip.Is4() {
			return nil, fmt.Errorf("parameter ip=%s: give an IPv4 address", x.ip)
		}
		ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip}
	}
	if x.mac != nil {
		ep.MacAddress = network.HardwareAddr(x.mac)
	}
	return &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{mode: &ep}}, nil
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
		p, ok := network.PortFrom(uint16(pb.ContainerPort), network.IPProtocol(proto))
		if !ok {
			return fmt.Errorf("port %s: protocol %q", pb.Name, proto)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = network.PortSet{}
			hc.PortBindings = network.PortMap{}
		}
		cfg.ExposedPorts[p] = struct{}{}
		hc.PortBindings[p] = append(hc.PortBindings[p], network.PortBinding{HostPort: strconv.Itoa(pb.HostPort)})
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
		c, err := d.inspect(ctx, name)
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
