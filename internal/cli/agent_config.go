package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// agentFile is `berth agent --config FILE`: YAML with the flags' names as keys. Flags
// given on the command line win over the file; labels and attributes of both are merged.
type agentFile struct {
	Server          stringList          `yaml:"server"`
	Token           string              `yaml:"token"`
	TokenFile       string              `yaml:"token-file"`
	CACert          string              `yaml:"ca-cert"`
	DataDir         string              `yaml:"data-dir"`
	Listen          string              `yaml:"listen"`
	Advertise       string              `yaml:"advertise"`
	NodeName        string              `yaml:"node-name"`
	IP              string              `yaml:"ip"`
	Label           map[string]string   `yaml:"label"`
	AttrText        map[string]string   `yaml:"attr-text"`
	AttrScalar      map[string]float64  `yaml:"attr-scalar"`
	AttrSet         map[string][]string `yaml:"attr-set"`
	PortRange       stringList          `yaml:"port-range"`
	Heartbeat       time.Duration       `yaml:"heartbeat"`
	Report          time.Duration       `yaml:"report"`
	VolumeGrace     time.Duration       `yaml:"volume-grace"`
	CgroupParent    string              `yaml:"cgroup-parent"`
	Docker          string              `yaml:"docker"`
	DockerHost      string              `yaml:"docker-host"`
	Runtime         string              `yaml:"container-runtime"`
	ContainerdAddr  string              `yaml:"containerd-address"`
	ContainerdCerts string              `yaml:"containerd-certs-dir"`
	// ContainerRuntimes are containerd's runtime handlers (docs/runtimes.md).
	ContainerRuntimes stringList `yaml:"container-runtimes"`
	CNIBinDir         string     `yaml:"cni-bin-dir"`
	CNIConfDir        string     `yaml:"cni-conf-dir"`
	NetworkImage      string     `yaml:"network-image"`
	GPUs              string     `yaml:"gpus"`
	GPUSharing        string     `yaml:"gpu-sharing"`
	VCUDADriverDir    string     `yaml:"vcuda-driver-dir"`
	HAMiLib           string     `yaml:"hami-lib"`
	DevicePluginDir   string     `yaml:"device-plugin-dir"`
	VolumePluginDir   string     `yaml:"volume-plugin-dir"`
	CSIPluginDir      string     `yaml:"csi-plugin-dir"`
	// VolumePluginTimeout bounds a FlexVolume driver's call.
	VolumePluginTimeout time.Duration `yaml:"volume-plugin-timeout"`
	// The cluster DNS server (agent_dns.go).
	DNSAddr       string     `yaml:"dns-addr"`
	DNSUpstream   stringList `yaml:"dns-upstream"`
	ClusterDomain string     `yaml:"cluster-domain"`
	ServiceProxy  string     `yaml:"service-proxy"`
	// The load-balancer group (agent_lb.go).
	LBGroup    string `yaml:"lb-group"`
	LBBind     string `yaml:"lb-bind"`
	LBHTTPPort int    `yaml:"lb-http-port"`
	HAProxy    string `yaml:"haproxy"`
	// The seccomp profiles workloads may name, a part of the node's guard.
	SecurityProfiles stringList `yaml:"security-profiles"`
	// The node's guard (agent_guard.go).
	AllowPrivileged bool       `yaml:"allow-privileged"`
	HostVolumes     stringList `yaml:"host-volumes"`
	DefaultUser     string     `yaml:"default-user"`
	TaskUIDRange    string     `yaml:"task-uid-range"`
	TaskUsers       stringList `yaml:"task-users"`
	ForbiddenGroups stringList `yaml:"forbidden-task-groups"`
	// The policy of workflow steps' http and git inputs (agent_guard.go).
	StepFetchAllow   stringList `yaml:"step-fetch-allow"`
	StepGitProtocols stringList `yaml:"step-git-protocols"`
	// The tasks' logs (agent_logs.go).
	LogMaxSize   string `yaml:"log-max-size"`
	LogMaxFiles  int    `yaml:"log-max-files"`
	LogLevel     string `yaml:"log-level"`
	OTLPEndpoint string `yaml:"otlp-endpoint"`

	// The revocable tier's bounds (agent_revocable.go); pointers, since 0 is a value.
	RevocableMaxFraction   *float64      `yaml:"revocable-max-fraction"`
	RevocableMargin        *float64      `yaml:"revocable-margin"`
	RevocableInterval      time.Duration `yaml:"revocable-interval"`
	RevocableEvictInterval time.Duration `yaml:"revocable-evict-interval"`
}

// stringList accepts a YAML list or one comma-separated string.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = splitList(n.Value)
		return nil
	}
	var items []string
	if err := n.Decode(&items); err != nil {
		return err
	}
	*l = items
	return nil
}

// readAgentFile decodes the file strictly: an unknown key is an error naming it, since a
// misspelt key would otherwise be silently ignored on a production node.
func readAgentFile(path string) (*agentFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var f agentFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return &f, nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parsePairs parses KEY=VALUE items into m (created when nil); flag names the option in errors.
func parsePairs(flag string, items []string, m map[string]string) (map[string]string, error) {
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, it)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[strings.TrimSpace(k)] = v
	}
	return m, nil
}

// parseAttributes adds --attr-text k=v, --attr-scalar k=N and --attr-set k=a,b to a.
func parseAttributes(a *v4.NodeAttributes, text, scalar, set []string) error {
	var err error
	if a.Text, err = parsePairs("--attr-text", text, a.Text); err != nil {
		return err
	}
	sc, err := parsePairs("--attr-scalar", scalar, nil)
	if err != nil {
		return err
	}
	for k, v := range sc {
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("--attr-scalar %s=%s: not a number", k, v)
		}
		if a.Scalar == nil {
			a.Scalar = map[string]float64{}
		}
		a.Scalar[k] = n
	}
	st, err := parsePairs("--attr-set", set, nil)
	if err != nil {
		return err
	}
	for k, v := range st {
		if a.Set == nil {
			a.Set = map[string][]string{}
		}
		a.Set[k] = splitList(v)
	}
	return nil
}

// parsePortRanges parses "BEGIN-END" items.
func parsePortRanges(items []string) ([]v4.PortRange, error) {
	var out []v4.PortRange
	for _, it := range items {
		b, e, ok := strings.Cut(strings.TrimSpace(it), "-")
		begin, err1 := strconv.Atoi(b)
		end, err2 := strconv.Atoi(e)
		if !ok || err1 != nil || err2 != nil || begin < 1 || end > 65535 || begin > end {
			return nil, fmt.Errorf("--port-range %q: want BEGIN-END within 1-65535, e.g. 31000-32000", it)
		}
		out = append(out, v4.PortRange{Begin: begin, End: end})
	}
	return out, nil
}
