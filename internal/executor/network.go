package executor

import (
	"maps"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// netPlan is how a container pod is networked (docs/agent.md, Container pods). In CNM mode the first container
// owns the network: it gets the mode and every port binding of the pod, and the others
// join it. In CNI mode the driver sets up a sandbox (driver.PodNetworks) that every
// container joins, and the bindings go to the CNI plugins (portmap) instead.
type netPlan struct {
	// mode is the owner's Docker network: HOST, BRIDGE, NONE, or a network name (USER
	// mode's "net" parameter, or a custom mode, which is a Docker network's name).
	mode string
	cni  bool
	// bindings are the port bindings of every task of the pod.
	bindings []driver.PortBinding
	// portEnv gives PORT_<name> for every port of the pod.
	portEnv []v4.AllocatedPort
	// podID names the CNI sandbox: "{namespace}.{name}".
	podID string
	// labels are the pod's labels for the sandbox (no task label: it is no task).
	labels map[string]string
}

// planNetwork derives the network of a container pod. allocated are the host ports the
// scheduler gave the task group, by port name (fixed and random). bridgeCNI is set for a
// driver without a bridge of its own (driver.CNIBridge): BRIDGE pods are CNI pods there.
func planNetwork(tg *v4.TaskGroup, node string, allocated map[string]v4.AllocatedPort, bridgeCNI bool) *netPlan {
	spec := &tg.Spec.Template.Spec
	n := &netPlan{
		mode:  spec.NetworkMode,
		cni:   strings.EqualFold(spec.NetworkType, "cni"),
		podID: tg.Metadata.Namespace + "." + tg.Metadata.Name,
	}
	if strings.EqualFold(n.mode, "USER") {
		n.mode = netParameter(spec.Containers)
	}
	if n.mode == "" {
		n.mode = "BRIDGE"
	}
	if bridgeCNI && strings.EqualFold(n.mode, "BRIDGE") {
		n.cni = true
	}
	n.labels = maps.Clone(tg.Spec.Labels)
	if n.labels == nil {
		n.labels = map[string]string{}
	}
	n.labels[driver.LabelTaskGroup] = podKey(tg.Metadata.Namespace, tg.Metadata.Name)
	n.labels[driver.LabelNode] = node
	if tg.Spec.OwnerVersion != "" {
		n.labels[driver.LabelVersion] = tg.Spec.OwnerVersion
	}
	publish := !strings.EqualFold(n.mode, "HOST") && !strings.EqualFold(n.mode, "NONE")
	for _, c := range spec.Containers {
		for _, sp := range c.Ports {
			ap, ok := allocated[sp.Name]
			// PORT_<name> (docs/agent.md, Container pods): the host port berth chose or was
			// given (HOST: the container port or the random one; BRIDGE: the host port),
			// else the container port (USER and custom networks, hostPort < 0).
			env := v4.AllocatedPort{Name: sp.Name, HostPort: sp.ContainerPort, Protocol: sp.Protocol}
			if ok {
				env.HostPort = ap.HostPort
			}
			n.portEnv = append(n.portEnv, env)
			if !publish {
				continue // HOST: the ports are the host's; NONE: nothing to publish
			}
			host := sp.HostPort
			if ok {
				host = ap.HostPort
			}
			if host <= 0 {
				continue // hostPort < 0: no mapping (BCS drops mappings with host port 0)
			}
			n.bindings = append(n.bindings, driver.PortBinding{
				Name: sp.Name, ContainerPort: sp.ContainerPort, HostPort: host, Protocol: dockerProtocol(sp.Protocol),
			})
		}
	}
	return n
}

// netParameter is the "net" parameter of the first container that has one (USER mode).
func netParameter(containers []v4.Container) string {
	for _, c := range containers {
		for _, p := range c.Parameters {
			if p.Key == "net" && strings.TrimSpace(p.Value) != "" {
				return strings.TrimSpace(p.Value)
			}
		}
	}
	return ""
}

// dockerProtocol maps a port's protocol to Docker's: http and https ride on tcp.
func dockerProtocol(p string) string {
	if strings.EqualFold(p, "udp") {
		return "udp"
	}
	return "tcp"
}

// hostMode reports whether the pod's containers use the host's network.
func (n *netPlan) hostMode() bool { return !n.cni && strings.EqualFold(n.mode, "HOST") }
