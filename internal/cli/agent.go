package cli

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/daemon"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/flexvolume"
	"github.com/berthhq/berth/internal/instvol"
)

// agentFlags are the flags of `berth agent`.
type agentFlags struct {
	servers         []string
	token           string
	tokenFile       string
	dataDir         string
	listen          string
	advertise       string
	nodeName        string
	ip              string
	labels          []string
	attrText        []string
	attrScalar      []string
	attrSet         []string
	portRanges      []string
	heartbeat       time.Duration
	report          time.Duration
	volumeGrace     time.Duration
	cgroupParent    string
	docker          string
	dockerHost      string
	runtime         string
	containerdAddr  string
	runtimes        []string
	containerdCerts string
	cniBinDir       string
	cniConfDir      string
	networkImage    string
	gpus            string
	gpuSharing      string
	vcudaDriver     string
	hamiLib         string
	devicePluginDir string
	volumePluginDir string
	csiPluginDir    string
	flexTimeout     time.Duration
	dns             agentDNSFlags
	lb              agentLBFlags
	guard           agentGuardFlags
	logs            agentLogFlags
	revocable       agentRevocableFlags
	config          string
	logLevel        string
	otlpEndpoint    string
}

const defaultAgentDataDir = "/var/lib/berth/agent"

func newAgentCommand(o *options) *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: register this machine and run its task groups",
		Long: "Run the berth agent of this machine (docs/agent.md). It registers the node with the\n" +
			"servers, runs the task groups they bind to it and reports their status. Stopping the\n" +
			"agent (SIGINT, SIGTERM) leaves the workloads running; the next start adopts them.\n" +
			"Container task groups run with Docker (--docker auto: when the daemon answers at\n" +
			"start); networktype: cni pods (and BRIDGE pods on containerd) use the CNI plugins of\n" +
			"--cni-bin-dir and the network config of --cni-conf-dir.\n\n" +
			"The first start joins the cluster: it exchanges the join token (--token, --token-file or\n" +
			"$BERTH_JOIN_TOKEN; a server's DATA-DIR/join-token, or `berth token create`) for the\n" +
			"node's certificate, kept in DATA-DIR/tls; later starts need no token. --config reads\n" +
			"a YAML file whose keys are the flags' names (label, attr-text, attr-scalar and\n" +
			"attr-set are maps there); flags on the command line win.",
		Example: "  berth agent --server 10.0.0.1:7470 --token-file /etc/berth/join-token\n" +
			"  berth agent --server 10.0.0.1:7470,10.0.0.2:7470 --token-file /etc/berth/join-token \\\n" +
			"      --label zone=a --attr-text rack=r1 --attr-scalar cpus=8 --attr-set idc=sh,bj\n" +
			"  berth agent --config /etc/berth/agent.yaml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, level, err := f.agentConfig(cmd, o)
			if err != nil {
				return err
			}
			cfg.Logger = slog.New(slog.NewTextHandler(o.env.stderr, &slog.HandlerOptions{Level: level}))
			agent.Version = Version
			endpoint, err := f.traceEndpoint(cmd)
			if err != nil {
				return err
			}
			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			p := daemon.Process{Service: "berth-agent", Version: Version, TraceEndpoint: endpoint, Logger: cfg.Logger}
			return p.Run(cmdContext(cmd), a.Run)
		},
	}
	f.register(cmd)
	return cmd
}

func (f *agentFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.servers, "server", nil, "API server address; repeat it or give a comma list to fail over in order")
	fl.StringVar(&f.token, "token", "", "join token (prefer --token-file: command lines are visible to other users)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the join token")
	fl.StringVar(&f.dataDir, "data-dir", defaultAgentDataDir, "directory of the checkpoint, the pods and the process driver's state")
	fl.DurationVar(&f.volumeGrace, "volume-grace", instvol.DefaultGrace, "how long an instance volume's directory outlives the instance's last task group on the node when the instance did not leave for good (docs/agent.md, \"Instance volumes\")")
	fl.StringVar(&f.listen, "listen", agent.DefaultListen, "address to serve logs and actions to the server on")
	fl.StringVar(&f.advertise, "advertise", "", "address the server reaches the agent at (default: the listen address with --ip)")
	fl.StringVar(&f.nodeName, "node-name", "", "node name (default: the host name)")
	fl.StringVar(&f.ip, "ip", "", "node IP (default: the address of the default route's interface)")
	fl.StringArrayVar(&f.labels, "label", nil, "node label KEY=VALUE (repeatable)")
	fl.StringArrayVar(&f.attrText, "attr-text", nil, "text attribute KEY=VALUE for constraints (repeatable)")
	fl.StringArrayVar(&f.attrScalar, "attr-scalar", nil, "scalar attribute KEY=NUMBER (repeatable)")
	fl.StringArrayVar(&f.attrSet, "attr-set", nil, "set attribute KEY=A,B,... (repeatable)")
	fl.StringSliceVar(&f.portRanges, "port-range", nil, "host ports for random ports, BEGIN-END (default 31000-32000)")
	fl.DurationVar(&f.heartbeat, "heartbeat", agent.DefaultHeartbeatInterval, "heartbeat interval")
	fl.DurationVar(&f.report, "report", agent.DefaultReportInterval, "periodic status report interval (every tenth report carries every task group, the others what changed)")
	fl.StringVar(&f.cgroupParent, "cgroup-parent", "", "cgroup under which the process driver puts tasks (default: the driver's)")
	fl.StringVar(&f.docker, "docker", agent.DockerAuto, "run container task groups with Docker: auto (when the daemon answers at start), on or off")
	fl.StringVar(&f.dockerHost, "docker-host", "", "Docker daemon address (default $DOCKER_HOST, else unix:///var/run/docker.sock)")
	fl.StringVar(&f.runtime, "container-runtime", agent.RuntimeDocker, "what runs container task groups: docker or containerd (docs/runtimes.md); with containerd, --docker and --docker-host do not apply")
	fl.StringVar(&f.containerdAddr, "containerd-address", containerd.DefaultAddress, "containerd's socket, with --container-runtime containerd")
	fl.StringSliceVar(&f.runtimes, "container-runtimes", nil, "with --container-runtime containerd: runtime handlers pods may name (spec.runtime) besides runc and crun found in PATH, NAME=BINARY or NAME=shim:RUNTIME_TYPE (crun=/usr/bin/crun,runsc=shim:io.containerd.runsc.v1; docs/runtimes.md)")
	fl.StringVar(&f.cniBinDir, "cni-bin-dir", "/usr/lib/cni", "directory of the CNI plugins (networktype: cni, and BRIDGE on containerd)")
	fl.StringVar(&f.containerdCerts, "containerd-certs-dir", containerd.DefaultCertsDir, "hosts directory of the containerd driver's pulls (<host:port>/ca.crt, hosts.toml), with --container-runtime containerd")
	fl.StringVar(&f.cniConfDir, "cni-conf-dir", "/etc/cni/net.d", "directory of the CNI network config (the first .conflist, .conf or .json)")
	fl.StringVar(&f.networkImage, "network-image", "", "image of the CNI pods' sandboxes and network holders (default: the driver's, built from the host's static busybox; on containerd it must be imported)")
	fl.StringVar(&f.gpus, "gpus", agent.GPUAuto, "report the node's NVIDIA GPUs: auto (the cards NVML finds; none without libnvidia-ml) or off")
	fl.StringVar(&f.gpuSharing, "gpu-sharing", agent.GPUAuto, "how shares of a card are enforced: auto (mps where nvidia-cuda-mps-control is installed, else none), mps, vcuda, hami or none (docs/gpus.md)")
	fl.StringVar(&f.vcudaDriver, "vcuda-driver-dir", "", "with --gpu-sharing vcuda: vcuda-controller's driver directory (lib64/ with libcuda-control.so, bin/gpu-client), mounted at /usr/local/nvidia")
	fl.StringVar(&f.hamiLib, "hami-lib", "", "with --gpu-sharing hami: HAMi-core's libvgpu.so")
	fl.StringVar(&f.devicePluginDir, "device-plugin-dir", "", "serve Kubernetes device plugins' registrations in this directory (kubelet.sock; theirs is /var/lib/kubelet/device-plugins); none when empty")
	fl.StringVar(&f.volumePluginDir, "volume-plugin-dir", flexvolume.DefaultPluginDir, "directory of the FlexVolume drivers pods' flexVolume volumes use (VENDOR~DRIVER/DRIVER, the kubelet's layout; docs/pods.md, \"FlexVolume\"); empty runs none")
	fl.StringVar(&f.csiPluginDir, "csi-plugin-dir", "", "directory where the node's CSI plugins listen (NAME/csi.sock) and csiPlugin pod volumes live (docs/volumes.md, \"Plugins\"); default DATA-DIR/csi/plugins")
	fl.DurationVar(&f.flexTimeout, "volume-plugin-timeout", flexvolume.DefaultTimeout, "how long one call of a FlexVolume driver may take before it is killed")
	f.dns.register(cmd)
	f.lb.register(cmd)
	f.guard.register(cmd)
	f.logs.register(cmd)
	f.revocable.register(cmd)
	fl.StringVar(&f.config, "config", "", "YAML file with the same keys as the flags")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", otlpEndpointHelp)
}

// traceEndpoint is --otlp-endpoint, else the config file's otlp-endpoint.
func (f agentFlags) traceEndpoint(cmd *cobra.Command) (string, error) {
	if cmd.Flags().Changed("otlp-endpoint") || f.config == "" {
		return f.otlpEndpoint, nil
	}
	file, err := readAgentFile(f.config)
	if err != nil {
		return "", err
	}
	return file.OTLPEndpoint, nil
}

// agentConfig merges the config file (when given) under the flags and checks the result.
func (f agentFlags) agentConfig(cmd *cobra.Command, o *options) (agent.Config, slog.Level, error) {
	var level slog.Level
	file := &agentFile{}
	if f.config != "" {
		var err error
		if file, err = readAgentFile(f.config); err != nil {
			return agent.Config{}, level, err
		}
	}
	m := flagMerge{changed: cmd.Flags().Changed, file: file}
	cfg := f.settings(m)
	cfg.ContainerRuntimes = f.runtimes
	if !m.changed("container-runtimes") {
		cfg.ContainerRuntimes = file.ContainerRuntimes
	}
	if _, err := f.dns.apply(&cfg, file, m.changed); err != nil {
		return cfg, level, err
	}
	if err := f.lb.apply(&cfg, file, m.changed); err != nil {
		return cfg, level, err
	}
	f.guards(&cfg, m)
	f.revocable.apply(&cfg, file, m.changed)
	if err := f.logs.apply(&cfg, file, m.changed); err != nil {
		return cfg, level, err
	}
	if err := checkModes(cfg); err != nil {
		return cfg, level, err
	}
	if err := f.connection(&cfg, m, o); err != nil {
		return cfg, level, err
	}
	if err := f.node(&cfg, m); err != nil {
		return cfg, level, err
	}
	lvl := m.pick("log-level", f.logLevel, file.LogLevel)
	if err := level.UnmarshalText([]byte(lvl)); err != nil {
		return cfg, level, fmt.Errorf("--log-level %q: use debug, info, warn or error", lvl)
	}
	return cfg, level, nil
}

// flagMerge merges the command line with the --config file: a flag given on the command
// line wins, else the file's value when it has one, else the flag's default.
type flagMerge struct {
	changed func(flag string) bool
	file    *agentFile
}

func (m flagMerge) pick(flag, flagVal, fileVal string) string {
	if !m.changed(flag) && fileVal != "" {
		return fileVal
	}
	return flagVal
}

// settings are the agent's plain string settings.
func (f agentFlags) settings(m flagMerge) agent.Config {
	file := m.file
	return agent.Config{
		DataDir:           m.pick("data-dir", f.dataDir, file.DataDir),
		Listen:            m.pick("listen", f.listen, file.Listen),
		Advertise:         m.pick("advertise", f.advertise, file.Advertise),
		NodeName:          m.pick("node-name", f.nodeName, file.NodeName),
		IP:                m.pick("ip", f.ip, file.IP),
		CgroupParent:      m.pick("cgroup-parent", f.cgroupParent, file.CgroupParent),
		Docker:            m.pick("docker", f.docker, file.Docker),
		DockerHost:        m.pick("docker-host", f.dockerHost, file.DockerHost),
		ContainerRuntime:  m.pick("container-runtime", f.runtime, file.Runtime),
		ContainerdAddress: m.pick("containerd-address", f.containerdAddr, file.ContainerdAddr),
		ContainerdCerts:   m.pick("containerd-certs-dir", f.containerdCerts, file.ContainerdCerts),
		CNIBinDir:         m.pick("cni-bin-dir", f.cniBinDir, file.CNIBinDir),
		CNIConfDir:        m.pick("cni-conf-dir", f.cniConfDir, file.CNIConfDir),
		NetworkImage:      m.pick("network-image", f.networkImage, file.NetworkImage),
		DefaultUser:       m.pick("default-user", f.guard.defaultUser, file.DefaultUser),
		GPUs:              m.pick("gpus", f.gpus, file.GPUs),
		GPUSharing:        m.pick("gpu-sharing", f.gpuSharing, file.GPUSharing),
		VCUDADriverDir:    m.pick("vcuda-driver-dir", f.vcudaDriver, file.VCUDADriverDir),
		HAMiLib:           m.pick("hami-lib", f.hamiLib, file.HAMiLib),
		DevicePluginDir:   m.pick("device-plugin-dir", f.devicePluginDir, file.DevicePluginDir),
		VolumePluginDir:   m.pick("volume-plugin-dir", f.volumePluginDir, file.VolumePluginDir),
		CSIPluginDir:      m.pick("csi-plugin-dir", f.csiPluginDir, file.CSIPluginDir),
		TaskUIDRange:      m.pick("task-uid-range", f.guard.taskUIDRange, file.TaskUIDRange),
	}
}

// guards are what the node's operator allows its workloads (docs/security.md).
func (f agentFlags) guards(cfg *agent.Config, m flagMerge) {
	file := m.file
	cfg.AllowPrivileged = f.guard.allowPrivileged
	if !m.changed("allow-privileged") && file.AllowPrivileged {
		cfg.AllowPrivileged = true
	}
	cfg.HostVolumes = f.guard.hostVolumes
	if !m.changed("host-volumes") {
		cfg.HostVolumes = file.HostVolumes
	}
	cfg.SecurityProfiles = f.guard.secProfiles
	if !m.changed("security-profiles") {
		cfg.SecurityProfiles = file.SecurityProfiles
	}
	cfg.TaskUsers, cfg.ForbiddenTaskGroups = f.guard.taskUsers, f.guard.forbiddenGroups
	if !m.changed("task-users") {
		cfg.TaskUsers = file.TaskUsers
	}
	if !m.changed("forbidden-task-groups") {
		cfg.ForbiddenTaskGroups = file.ForbiddenGroups
	}
	cfg.StepFetchAllow, cfg.StepGitProtocols = f.guard.stepFetchAllow, f.guard.stepGitProtocols
	if !m.changed("step-fetch-allow") {
		cfg.StepFetchAllow = file.StepFetchAllow
	}
	if !m.changed("step-git-protocols") {
		cfg.StepGitProtocols = file.StepGitProtocols
	}
}

// checkModes checks the settings that take one of a few words.
func checkModes(cfg agent.Config) error {
	switch cfg.Docker {
	case agent.DockerAuto, agent.DockerOn, agent.DockerOff:
	default:
		return fmt.Errorf("--docker %q: use %s, %s or %s", cfg.Docker, agent.DockerAuto, agent.DockerOn, agent.DockerOff)
	}
	switch cfg.ContainerRuntime {
	case agent.RuntimeDocker, agent.RuntimeContainerd:
	default:
		return fmt.Errorf("--container-runtime %q: use %s or %s", cfg.ContainerRuntime, agent.RuntimeDocker, agent.RuntimeContainerd)
	}
	if len(cfg.ContainerRuntimes) > 0 && cfg.ContainerRuntime != agent.RuntimeContainerd {
		return fmt.Errorf("--container-runtimes: only with --container-runtime %s; Docker's runtimes are those of its daemon.json", agent.RuntimeContainerd)
	}
	switch cfg.GPUs {
	case agent.GPUAuto, agent.GPUOff:
	default:
		return fmt.Errorf("--gpus %q: use %s or %s", cfg.GPUs, agent.GPUAuto, agent.GPUOff)
	}
	return nil
}

// connection is how the agent reaches the servers: their URLs, how often it calls, its
// join token and the CA it trusts.
func (f agentFlags) connection(cfg *agent.Config, m flagMerge, o *options) error {
	file := m.file
	cfg.ServerURLs = f.servers
	if !m.changed("server") {
		cfg.ServerURLs = file.Server
	}
	if len(cfg.ServerURLs) == 0 {
		return fmt.Errorf("give the API servers with --server (or server: in --config)")
	}
	cfg.HeartbeatInterval, cfg.ReportInterval = f.heartbeat, f.report
	if !m.changed("heartbeat") && file.Heartbeat > 0 {
		cfg.HeartbeatInterval = file.Heartbeat
	}
	if !m.changed("report") && file.Report > 0 {
		cfg.ReportInterval = file.Report
	}
	cfg.FlexVolumeTimeout = f.flexTimeout
	if !m.changed("volume-plugin-timeout") && file.VolumePluginTimeout > 0 {
		cfg.FlexVolumeTimeout = file.VolumePluginTimeout
	}
	cfg.InstanceVolumeGrace = f.volumeGrace
	if !m.changed("volume-grace") && file.VolumeGrace > 0 {
		cfg.InstanceVolumeGrace = file.VolumeGrace
	}
	token, err := f.joinToken(file, m.changed, o)
	if err != nil {
		return err
	}
	cfg.Token = token
	cfg.CACertFile = o.caCert
	if !m.changed("ca-cert") && file.CACert != "" {
		cfg.CACertFile = file.CACert
	}
	return nil
}

// node is what the node reports of itself: labels, attributes and host port ranges.
func (f agentFlags) node(cfg *agent.Config, m flagMerge) error {
	file := m.file
	var err error
	cfg.Labels = maps.Clone(file.Label)
	if cfg.Labels, err = parsePairs("--label", f.labels, cfg.Labels); err != nil {
		return err
	}
	cfg.Attributes.Text, cfg.Attributes.Scalar = maps.Clone(file.AttrText), maps.Clone(file.AttrScalar)
	cfg.Attributes.Set = maps.Clone(file.AttrSet)
	if err := parseAttributes(&cfg.Attributes, f.attrText, f.attrScalar, f.attrSet); err != nil {
		return err
	}
	ranges := f.portRanges
	if !m.changed("port-range") {
		ranges = file.PortRange
	}
	cfg.PortRanges, err = parsePortRanges(ranges)
	return err
}

// joinToken takes --token, else --token-file, else the file's token or token-file, else
// $BERTH_JOIN_TOKEN, else none.
func (f agentFlags) joinToken(file *agentFile, changed func(string) bool, o *options) (string, error) {
	fromFile := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("join token: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("join token: %s is empty", path)
		}
		return t, nil
	}
	switch {
	case changed("token") && f.token != "":
		return f.token, nil
	case changed("token-file"):
		return fromFile(f.tokenFile)
	case file.Token != "":
		return file.Token, nil
	case file.TokenFile != "":
		return fromFile(file.TokenFile)
	case o.env.getenv("BERTH_JOIN_TOKEN") != "":
		return o.env.getenv("BERTH_JOIN_TOKEN"), nil
	}
	return "", nil // the node may have its certificate already; the agent says when it needs one
}
