// Package cni calls CNI plugins for a pod's network namespace through libcni: it loads
// the network config, runs ADD and DEL, and keeps the config in a self-contained form so
// that DEL runs with exactly the config of the ADD, whatever happens to the config
// directory meanwhile.
package cni

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/berthhq/berth/internal/driver"
)

// IfName is the interface CNI creates in the pod's namespace.
const IfName = "eth0"

// PortMapping is one host port forwarded to the pod, passed to plugins that declare the
// portMappings capability (portmap). Its JSON is the capability's.
type PortMapping struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// Mappings are a pod's port bindings for portmap: those with a host port and a
// container port, tcp unless they say udp (or sctp).
func Mappings(pbs []driver.PortBinding) []PortMapping {
	var out []PortMapping
	for _, pb := range pbs {
		if pb.HostPort <= 0 || pb.ContainerPort <= 0 {
			continue
		}
		proto := strings.ToLower(pb.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		out = append(out, PortMapping{HostPort: pb.HostPort, ContainerPort: pb.ContainerPort, Protocol: proto})
	}
	return out
}

// Network is one CNI network config with the plugins to run it.
type Network struct {
	list *libcni.NetworkConfigList
	cni  *libcni.CNIConfig
}

// Load reads the first network config of confDir in name order (.conflist, then .conf
// and .json, upgraded to a list), as kubelet and BCS pick theirs. Plugins are looked up
// in binDir; libcni keeps its results under cacheDir (DEL reads them).
func Load(confDir, binDir, cacheDir string) (*Network, error) {
	files, err := libcni.ConfFiles(confDir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return nil, fmt.Errorf("cni: config dir %s: %w", confDir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("cni: no network config (.conflist, .conf, .json) in %s", confDir)
	}
	sort.Strings(files)
	f := files[0]
	var list *libcni.NetworkConfigList
	if strings.HasSuffix(f, ".conflist") {
		list, err = libcni.NetworkConfFromFile(f)
	} else {
		var one *libcni.PluginConfig
		if one, err = libcni.ConfFromFile(f); err == nil { //nolint:staticcheck // single-plugin configs are still written
			list, err = libcni.ConfListFromConf(one)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cni: %s: %w", f, err)
	}
	return newNetwork(list, binDir, cacheDir), nil
}

// FromBytes rebuilds a network from what Bytes returned.
func FromBytes(raw []byte, binDir, cacheDir string) (*Network, error) {
	list, err := libcni.NetworkConfFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("cni: saved network config: %w", err)
	}
	return newNetwork(list, binDir, cacheDir), nil
}

func newNetwork(list *libcni.NetworkConfigList, binDir, cacheDir string) *Network {
	return &Network{list: list, cni: libcni.NewCNIConfigWithCacheDir([]string{binDir}, cacheDir, nil)}
}

// Name is the network's name (host-local keeps its leases under
// /var/lib/cni/networks/<name>).
func (n *Network) Name() string { return n.list.Name }

// Bytes is the config as one list with every plugin inlined, for FromBytes.
func (n *Network) Bytes() ([]byte, error) {
	plugins := make([]json.RawMessage, len(n.list.Plugins))
	for i, p := range n.list.Plugins {
		plugins[i] = p.Bytes
	}
	return json.Marshal(map[string]any{
		"cniVersion":             n.list.CNIVersion,
		"name":                   n.list.Name,
		"disableCheck":           n.list.DisableCheck,
		"loadOnlyInlinedPlugins": true,
		"plugins":                plugins,
	})
}

// Add runs CNI ADD for the container on netns (a path such as /proc/<pid>/ns/net) and
// returns the pod's IP (the first IPv4 one, else the first).
func (n *Network) Add(ctx context.Context, containerID, netns string, ports []PortMapping) (string, error) {
	res, err := n.cni.AddNetworkList(ctx, n.list, runtimeConf(containerID, netns, ports))
	if err != nil {
		return "", fmt.Errorf("cni: ADD on network %s: %w", n.list.Name, err)
	}
	cur, err := types100.NewResultFromResult(res)
	if err != nil {
		return "", fmt.Errorf("cni: result of network %s: %w", n.list.Name, err)
	}
	var ip net.IP
	for _, c := range cur.IPs {
		if c.Address.IP.To4() != nil {
			ip = c.Address.IP
			break
		}
		if ip == nil {
			ip = c.Address.IP
		}
	}
	if ip == nil {
		return "", fmt.Errorf("cni: network %s gave no IP", n.list.Name)
	}
	return ip.String(), nil
}

// Del runs CNI DEL. netns may be empty when the namespace is gone (the sandbox was
// killed or removed): plugins then release what they hold outside it (host-local's
// lease, portmap's rules), which is what BCS failed to do.
func (n *Network) Del(ctx context.Context, containerID, netns string, ports []PortMapping) error {
	if err := n.cni.DelNetworkList(ctx, n.list, runtimeConf(containerID, netns, ports)); err != nil {
		return fmt.Errorf("cni: DEL on network %s: %w", n.list.Name, err)
	}
	return nil
}

func runtimeConf(containerID, netns string, ports []PortMapping) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{ContainerID: containerID, NetNS: netns, IfName: IfName}
	if len(ports) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": ports}
	}
	return rt
}
