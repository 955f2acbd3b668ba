package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/logfile"
)

// Defaults of Config.
const (
	DefaultListen            = "0.0.0.0:7471"
	DefaultHeartbeatInterval = v4.MinHeartbeatInterval
	DefaultReportInterval    = 30 * time.Second
	// defaultKillGrace stops leftover tasks whose task group's grace is not known.
	defaultKillGrace = 10 * time.Second
)

// DNSAuto as Config.DNSAddr puts the cluster DNS server on port 53 of the node's IP.
const DNSAuto = "auto"

// Version is the agent version reported in heartbeats; the CLI sets it to the binary's.
var Version = "dev"

// Config configures an agent. ServerURLs and DataDir are required, and Token until the
// node has its certificate.
type Config struct {
	// ServerURLs are the API servers, tried in order; the agent fails over to the next
	// when one cannot be reached and stays with the one that answers.
	ServerURLs []string
	// Token is a join token ("berth-<id>.<secret>::sha256:<CA hash>"), exchanged on the
	// first start for the node's certificate (identity.go); later starts need none.
	Token string
	// CACertFile, when set, is the CA that verifies the servers (an operator's, when they
	// serve their own certificates; else the cluster CA), instead of the token's CA hash.
	CACertFile string
	// NodeName is the node's name (default: the host name, lowercased).
	NodeName string
	// IP is the node's address (default: that of the default route's interface, else
	// the first non-loopback one, else 127.0.0.1).
	IP string
	// DataDir holds the checkpoint, the pods' directories and the process driver's state.
	DataDir string
	// Listen is where the agent serves logs and actions to the server (default
	// 0.0.0.0:7471; port 0 picks one). Advertise is the address the server uses to reach
	// it (default: the listen address, with IP when it listens on every interface).
	Listen    string
	Advertise string
	// Labels and Attributes are the node's, as the agent gives them (operators may add
	// their own with berth node label|attr: the server keeps both).
	Labels     map[string]string
	Attributes v4.NodeAttributes
	// PortRanges are the host ports given to random ports (default 31000-32000).
	PortRanges []v4.PortRange
	// HeartbeatInterval (default 3 s) and ReportInterval (full report, default 30 s).
	HeartbeatInterval time.Duration
	ReportInterval    time.Duration
	// CgroupParent is where the process driver puts its tasks' cgroups ("" for its default).
	CgroupParent string
	// Docker is DockerAuto (default), DockerOn or DockerOff: whether container task
	// groups run here. DockerHost is the daemon (default $DOCKER_HOST, else the local
	// socket); CNIBinDir and CNIConfDir are the CNI plugins and network config of
	// networktype: cni pods; NetworkImage is their sandbox's image ("" for the driver's).
	Docker     string
	DockerHost string
	// ContainerRuntime is RuntimeDocker (default) or RuntimeContainerd: which driver runs
	// container task groups (docs/runtimes.md). With containerd, Docker and DockerHost
	// do not apply: ContainerdAddress is the daemon's socket (default
	// /run/containerd/containerd.sock); CNIBinDir, CNIConfDir and NetworkImage serve its
	// CNI and BRIDGE pods; ContainerdCerts is the hosts directory its pulls read a
	// registry's CA and mirrors from (default /etc/containerd/certs.d).
	ContainerRuntime  string
	ContainerdAddress string
	ContainerdCerts   string
	// ContainerRuntimes are containerd's runtime handlers pods may name besides runc and
	// crun found in PATH (docs/runtimes.md): NAME=BINARY or NAME=shim:RUNTIME_TYPE.
	ContainerRuntimes []string
	CNIBinDir         string
	CNIConfDir        string
	NetworkImage      string
	// AllowPrivileged lets this node run workloads that need a privilege other than host
	// paths (privileged containers, host namespaces, capabilities, devices, unconfined
	// profiles, sysctls, root processes) once the server admitted them; HostVolumes are
	// the host directories workloads may use ("DIR" or "DIR:ro"). Both default to none.
	AllowPrivileged bool
	HostVolumes     []string
	// SecurityProfiles are the seccomp profiles workloads may name (security-opt
	// seccomp=NAME): NAME=FILE entries, FILE a profile in Docker's JSON, read at start.
	SecurityProfiles []string
	// DefaultUser runs the processes whose spec names no user. Empty (the default): an
	// agent running as root runs each task group's under a uid of its own from
	// TaskUIDRange (default 80000-89999); another agent runs them as itself.
	DefaultUser  string
	TaskUIDRange string
	// TaskUsers are the node accounts a spec's user may name (names or uids); root is
	// the root privilege's, with AllowPrivileged. ForbiddenTaskGroups are groups whose
	// members never run tasks (default DefaultForbiddenGroups; gid 0 always).
	TaskUsers           []string
	ForbiddenTaskGroups []string
	// StepFetchAllow are networks (CIDRs or addresses) a workflow step's http and git
	// inputs may reach although they are refused by default: loopback, link-local,
	// multicast and the node's own addresses (docs/agent.md, "Workflow steps").
	// StepGitProtocols are git transports allowed besides https: http, git, ssh.
	StepFetchAllow   []string
	StepGitProtocols []string
	// LogLimits bound each task's log (docs/agent.md, "Task logs"): a process task's
	// shim rotates it, and a container on Docker's json-file or local log driver gets
	// them as max-size and max-file when its spec sets no log options. Zero: 10 MiB and
	// 5 files (logfile.DefaultMaxBytes, logfile.DefaultMaxFiles).
	LogLimits logfile.Limits
	// ProtectedPaths are directories no workload's path may reach, even below a host
	// volume (docs/security.md, "Paths"): the agent's data dir always; `berth dev` adds
	// its server's.
	ProtectedPaths []string
	// DNSAddr is where the node-local cluster DNS server listens, UDP and TCP
	// (docs/services.md, "Names"); DNSAuto is port 53 of IP; "" runs none. Containers reach it only on port 53 of
	// an address their network can reach (the node's IP). DNSUpstreams are the resolvers
	// it forwards other names to (default: those of /etc/resolv.conf); ClusterDomain ends
	// the services' names (default DefaultClusterDomain).
	DNSAddr       string
	DNSUpstreams  []string
	ClusterDomain string
	// DNSFallback, when set, is where the DNS server listens when it cannot on DNSAddr
	// (berth dev: a free port of 127.0.0.1, when another berth dev has port 53 of the
	// node's IP); the agent says so. Empty, that is an error at start.
	DNSFallback string
	// OnCatalog, when set, is called with every service and endpoints object the agent
	// receives, and makes it follow them even without a DNS server (berth sim measures
	// how soon an instance reaches every node's catalog with it).
	OnCatalog func(v4.Object)
	// ServiceProxy forwards the services' virtual IPs on this node with nftables
	// (docs/services.md, "Virtual IPs"); it needs the cluster DNS server's catalog
	// (DNSAddr) and root. Off, the agent removes the proxy's table at start.
	ServiceProxy bool
	// RemoveProxyTableAtStop removes the proxy's table when the agent stops (berth dev,
	// whose server stops with it: left, the table would answer the VIPs of a later
	// cluster on the machine with this one's instances). Off, the table outlives the
	// agent, so forwarding goes on while it restarts.
	RemoveProxyTableAtStop bool
	// LBGroup, when set, makes this node serve the services exported to that BCS
	// load-balancer group with HAProxy (docs/services.md, "Load-balancer groups"), on
	// LBBind (every address when "") with HTTP ports on LBHTTPPort (default 80). HAProxy
	// is the haproxy command (default "haproxy").
	LBGroup    string
	LBBind     string
	LBHTTPPort int
	HAProxy    string
	// GPUs is GPUAuto (default: the cards NVML finds, none without the library) or
	// GPUOff; GPUSource, when set, replaces NVML (tests give a model of the cards).
	GPUs      string
	GPUSource gpu.Source
	// GPUSharing enforces shares of cards (docs/gpus.md): GPUAuto (default: mps where
	// the MPS control daemon is installed, else none), GPUSharingMPS, GPUSharingVCUDA
	// (with VCUDADriverDir, vcuda-controller's driver), GPUSharingHAMi (with HAMiLib,
	// HAMi-core's libvgpu.so) or GPUSharingNone.
	GPUSharing     string
	VCUDADriverDir string
	HAMiLib        string
	// DevicePluginDir, when set, is where the agent serves kubelet's device-plugin
	// Registration API (kubelet.sock) and finds the plugins' sockets: Kubernetes' device
	// plugins (/var/lib/kubelet/device-plugins by default) register their resources here.
	DevicePluginDir string
	// VolumePluginDir, when set, holds the FlexVolume drivers pods' flexVolume volumes
	// use (<dir>/vendor~driver/driver; the CLI's default is the kubelet's,
	// flexvolume.DefaultPluginDir); empty, the node runs no FlexVolumes.
	// FlexVolumeTimeout bounds each call of a driver (flexvolume.DefaultTimeout when 0).
	VolumePluginDir   string
	FlexVolumeTimeout time.Duration
	// CSIPluginDir is where the node's CSI plugins listen, <dir>/<name>/csi.sock, and
	// where csiPlugin pod volumes are (docs/volumes.md, "Plugins"); default
	// <DataDir>/csi/plugins.
	CSIPluginDir string
	// Drivers replaces the default drivers (the process driver under DataDir/process);
	// the caller owns them. Tests inject fake drivers here.
	Drivers map[string]driver.Driver
	// ProcRoot is where the node's sockets and processes are read, for its busy ports
	// and the holders of taken ports (default "/proc"; tests give their own tables).
	// BusyPortsInterval is how often the busy ports are read (DefaultBusyPortsInterval).
	ProcRoot          string
	BusyPortsInterval time.Duration
	// RevocableMaxFraction bounds what the node lends to the revocable tier (a share of
	// its allocatable cpu and memory; 0 lends nothing), RevocableMargin is the share kept
	// back above the owners' measured use (docs/policy.md, "Revocable capacity").
	// RevocableInterval is how often the pods are measured and the report sent
	// (DefaultRevocableInterval), RevocableEvictInterval the least time between two
	// evictions (DefaultRevocableEvictInterval).
	RevocableMaxFraction   float64
	RevocableMargin        float64
	RevocableInterval      time.Duration
	RevocableEvictInterval time.Duration
	// InstanceVolumeGrace is how long an instance's volume directories outlive its last
	// task group on the node when nothing said it left for good (instvol.DefaultGrace
	// when 0; docs/agent.md, "Instance volumes").
	InstanceVolumeGrace time.Duration
	// VolumeRefreshInterval is how often the configMap and secret volumes of running
	// pods are compared with their objects (DefaultVolumeRefreshInterval when 0;
	// docs/pods.md, "Volumes").
	VolumeRefreshInterval time.Duration
	// TuneExecutor, if set, adjusts the executor's config before it is created (tests
	// shorten its poll interval).
	TuneExecutor func(*executor.Config)
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// followsCatalog reports whether the agent keeps a catalog of the cluster's services:
// for its DNS server (and service proxy), its load-balancer group, or OnCatalog. Its
// watch then takes a stream of its own (a connection with a server that offers only
// HTTP/1.1: agentMaxConnsDNS).
func (c Config) followsCatalog() bool {
	return c.DNSAddr != "" || c.OnCatalog != nil || c.LBGroup != ""
}

// containerDefaults checks and defaults the container runtime's settings.
func (c *Config) containerDefaults() error {
	switch c.Docker {
	case "":
		c.Docker = DockerAuto
	case DockerAuto, DockerOn, DockerOff:
	default:
		return fmt.Errorf("agent config: docker mode %q: use %s, %s or %s", c.Docker, DockerAuto, DockerOn, DockerOff)
	}
	switch c.ContainerRuntime {
	case "":
		c.ContainerRuntime = RuntimeDocker
	case RuntimeDocker, RuntimeContainerd:
	default:
		return fmt.Errorf("agent config: container runtime %q: use %s or %s", c.ContainerRuntime, RuntimeDocker, RuntimeContainerd)
	}
	if len(c.ContainerRuntimes) > 0 && c.ContainerRuntime != RuntimeContainerd {
		return fmt.Errorf("agent config: container runtimes %v: they are containerd's (--container-runtime containerd); Docker's are those of its daemon.json", c.ContainerRuntimes)
	}
	return nil
}

// withDefaults fills in what the config leaves out and checks what it must have.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if len(c.ServerURLs) == 0 {
		errs = append(errs, errors.New("no server address"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("no data directory"))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("agent config: %w", errors.Join(errs...))
	}
	if err := c.containerDefaults(); err != nil {
		return c, err
	}
	if _, err := c.stepFetchPolicy(); err != nil {
		return c, fmt.Errorf("agent config: %w", err)
	}
	switch c.GPUs {
	case "":
		c.GPUs = GPUAuto
	case GPUAuto, GPUOff:
	default:
		return c, fmt.Errorf("agent config: GPU mode %q: use %s or %s", c.GPUs, GPUAuto, GPUOff)
	}
	if c.GPUs == GPUOff {
		c.GPUSharing = GPUSharingNone
	} else if mode, err := gpu.SharingMode(c.GPUSharing, c.VCUDADriverDir, c.HAMiLib); err != nil {
		return c, fmt.Errorf("agent config: %w", err)
	} else {
		c.GPUSharing = mode
	}
	if c.LogLimits == (logfile.Limits{}) {
		c.LogLimits = logfile.Limits{MaxBytes: logfile.DefaultMaxBytes, MaxFiles: logfile.DefaultMaxFiles}
	}
	if err := c.LogLimits.Check(); err != nil {
		return c, fmt.Errorf("agent config: %w", err)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("agent config: no node name and no host name: %w", err)
		}
		c.NodeName = strings.ToLower(h)
	}
	if c.IP == "" {
		c.IP = detectIP()
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if len(c.PortRanges) == 0 {
		c.PortRanges = []v4.PortRange{v4.DefaultPortRange}
	}
	if c.DNSAddr == DNSAuto {
		c.DNSAddr = net.JoinHostPort(c.IP, "53")
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.ReportInterval <= 0 {
		c.ReportInterval = DefaultReportInterval
	}
	if c.BusyPortsInterval <= 0 {
		c.BusyPortsInterval = DefaultBusyPortsInterval
	}
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	var err error
	if c.CSIPluginDir, err = csiPluginDir(c.CSIPluginDir, c.DataDir); err != nil {
		return c, err
	}
	return c, c.revocableDefaults()
}

// revocableDefaults fills and checks the revocable tier's settings.
func (c *Config) revocableDefaults() error {
	if c.RevocableInterval <= 0 {
		c.RevocableInterval = DefaultRevocableInterval
	}
	if c.RevocableEvictInterval <= 0 {
		c.RevocableEvictInterval = DefaultRevocableEvictInterval
	}
	if !(c.RevocableMaxFraction >= 0 && c.RevocableMaxFraction <= 1 && c.RevocableMargin >= 0 && c.RevocableMargin <= 1) {
		return fmt.Errorf("agent config: the revocable tier's max fraction (%v) and margin (%v) are shares from 0 to 1", c.RevocableMaxFraction, c.RevocableMargin)
	}
	return nil
}
