package controller

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// endpointsFor builds the endpoints of svc from the task groups of its namespace: those
// its selector matches and that have not ended, ready ones in Endpoints, the others in
// NotReady with the reason. A Lost instance is never ready: its node is silent, so it
// may be gone (BCS kept Lost instances in its endpoints).
func endpointsFor(svc *v4.Service, tgs []*v4.TaskGroup) *v4.Endpoints {
	ep := &v4.Endpoints{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindEndpoint},
		Metadata: v4.ObjectMeta{Name: svc.Metadata.Name, Namespace: svc.Metadata.Namespace, Labels: svc.Metadata.Labels},
	}
	for _, tg := range tgs {
		if !v4.Selects(svc.Spec.Selector, tg.Spec.Labels) || v4.Terminal(tg.Status.Phase) {
			continue
		}
		e := endpointOf(svc, tg)
		ready, reason := tg.Readiness()
		if ready && len(svc.Spec.Ports) > 0 && len(e.Ports) == 0 {
			ready, reason = false, "none of the service's ports is a port of the instance"
		}
		if ready && e.NodeIP == "" {
			ready, reason = false, "no address reported yet"
		}
		if ready {
			ep.Endpoints = append(ep.Endpoints, e)
		} else {
			e.Reason = reason
			ep.NotReady = append(ep.NotReady, e)
		}
	}
	byTarget := func(a, b v4.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Target.Name, b.Target.Name), cmp.Compare(a.Target.Index, b.Target.Index),
			cmp.Compare(a.Target.ID, b.Target.ID))
	}
	slices.SortFunc(ep.Endpoints, byTarget)
	slices.SortFunc(ep.NotReady, byTarget)
	return ep
}

// endpointOf is the endpoint of one task group: its addresses and, for each service
// port it has, where that port is reached.
func endpointOf(svc *v4.Service, tg *v4.TaskGroup) v4.Endpoint {
	spec := &tg.Spec.Template.Spec
	mode := spec.NetworkMode
	if len(spec.Processes) > 0 {
		mode = "HOST"
	}
	nodeIP := tg.Status.HostIP
	containerIP := ""
	for _, ts := range tg.Status.Tasks {
		if nodeIP == "" {
			nodeIP = ts.Info.NodeAddress
		}
		if containerIP == "" {
			containerIP = ts.Info.IPAddress
		}
	}
	if mode == "HOST" || containerIP == "" && len(spec.Processes) > 0 {
		containerIP = nodeIP
	}
	e := v4.Endpoint{
		NetworkMode: mode, NodeIP: nodeIP, ContainerIP: containerIP, Node: tg.Spec.Node,
		Target: v4.TargetRef{Kind: tg.Spec.Owner.Kind, ID: tg.Metadata.Name, Name: tg.Spec.Owner.Name,
			Namespace: tg.Metadata.Namespace, Index: tg.Spec.Index},
	}
	for _, sp := range svc.Spec.Ports {
		if p, ok := resolvePort(sp, mode, nodeIP, containerIP, spec, tg.Spec.Ports); ok {
			e.Ports = append(e.Ports, p)
		}
	}
	return e
}

// resolvePort finds where service port sp is reached on an instance (BCS's rules): the
// task port of the same name; the node's IP and the port's host port when it has one on
// the node (host networking, processes, bridge with a host port), else the pod's IP and
// the container port. A service port with a targetPort and no task port of its name goes
// to that port number.
func resolvePort(sp v4.ServicePort, mode, nodeIP, containerIP string, spec *v4.PodSpec, allocated []v4.AllocatedPort) (v4.EndpointPort, bool) {
	out := v4.EndpointPort{Name: sp.Name, Protocol: sp.Protocol}
	tp, found := taskPort(spec, sp.Name)
	if !found {
		if sp.TargetPort <= 0 {
			return out, false
		}
		out.ContainerPort, out.Port, out.IP = sp.TargetPort, sp.TargetPort, containerIP
		return out, out.IP != ""
	}
	out.ContainerPort = tp.ContainerPort
	for _, ap := range allocated {
		if ap.Name == sp.Name && ap.HostPort > 0 {
			out.HostPort, out.IP, out.Port = ap.HostPort, nodeIP, ap.HostPort
			return out, out.IP != ""
		}
	}
	if mode == "HOST" || tp.ContainerPort <= 0 {
		return out, false // a host port that was never allocated, or none at all
	}
	out.IP, out.Port = containerIP, tp.ContainerPort
	return out, out.IP != ""
}

// taskPort finds the port called name among a pod's tasks.
func taskPort(spec *v4.PodSpec, name string) (v4.Port, bool) {
	ports := spec.Ports()
	if i := slices.IndexFunc(ports, func(p v4.Port) bool { return p.Name == name }); i >= 0 {
		return ports[i], true
	}
	return v4.Port{}, false
}

// labelSelector renders a selector as sorted k=v pairs.
func labelSelector(sel map[string]string) string {
	keys := slices.Sorted(maps.Keys(sel))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ",")
}
