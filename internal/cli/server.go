package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agentapi"
	"github.com/berthhq/berth/internal/daemon"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/server"
)

// serverFlags are the flags of `berth server` and `berth dev`.
type serverFlags struct {
	listen        string
	dataDir       string
	keyFile       string
	etcdEndpoints []string
	logLevel      string
	placement     string
	packagesDir   string
	joinToken     string
	joinTokenFile string
	etcdCA        string
	etcdCert      string
	etcdKey       string
	tlsCert       string
	tlsKey        string
	tlsSANs       []string
	insecure      string
	maxConns      int
	maxConnsSrc   int
	seats         server.APISeats
	certLifetime  time.Duration
	auditLog      string
	auditMaxSize  string
	auditMaxFiles int
	agent         bool            // berth dev: run an agent in the process
	agentGuard    agentGuardFlags // berth dev: what its agent allows workloads
	devNode       devNodeFlags    // berth dev: its agent's node name and port ranges
	agentLogs     agentLogFlags   // berth dev: the bounds of its agent's task logs
	devDNS        agentDNSFlags   // berth dev: its agent's DNS server and service proxy
	member        memberFlags
	nodeTTL       time.Duration
	maxBeats      float64
	serviceCIDR   string
	dependencyGC  time.Duration
	wfPerNS       int
	etcd          etcdSpaceFlags
	retention     retentionFlags
	bcsClusterID  string
	otlpEndpoint  string
	subMinute     bool
	// artifactPrivate lets artifactrepository endpoints be private addresses.
	artifactPrivate bool
}

// AllowSubMinuteFlag is the server flag that admits sub-minute schedules.
const AllowSubMinuteFlag = "allow-sub-minute-schedules"

// otlpEndpointHelp is the help of the servers' and agents' --otlp-endpoint.
const otlpEndpointHelp = "export traces over OTLP/gRPC to this collector (host:port, or http:// for plain text); default: the OTEL_EXPORTER_OTLP_ENDPOINT variables, else no traces (docs/tracing.md)"

func (f *serverFlags) register(cmd *cobra.Command, dataDirHelp string) {
	cmd.Flags().StringVar(&f.listen, "listen", server.DefaultListen, "address to serve the API on")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "", dataDirHelp)
	cmd.Flags().StringVar(&f.keyFile, "encryption-key-file", "", "the keys that encrypt secrets at rest, NAME:BASE64 a line, the first encrypting (default: DATA-DIR/encryption.key, created on the first start or received when joining; docs/security.md)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().StringVar(&f.placement, "placement", "spread", "cluster-wide placement: spread (emptiest node first) or binpack (fullest node that fits)")
	cmd.Flags().StringVar(&f.packagesDir, "packages-dir", "", "serve the files of this directory at /packages/ (a package repository for process uris)")
	cmd.Flags().BoolVar(&f.artifactPrivate, "artifact-allow-private-endpoints", false, "let artifactrepository endpoints be loopback, link-local or private addresses (refused by default: a namespace's user could make the server talk to etcd or an agent; docs/workflows.md)")
	cmd.Flags().DurationVar(&f.nodeTTL, "node-ttl", daemon.DefaultNodeTTL, "how long a node's agent may stay silent before the node and its task groups are Lost")
	cmd.Flags().Float64Var(&f.maxBeats, "max-heartbeats-per-second", agentapi.DefaultMaxBeatsPerSecond, "bound on the heartbeats of the whole cluster: agents beat less often as nodes join (3 s to 60 s), and each node's ttl grows with its interval (0: no bound, every agent every 3 s)")
	cmd.Flags().StringVar(&f.serviceCIDR, "service-cidr", daemon.DefaultServiceCIDR.String(), "IPv4 range of the services' virtual IPs (docs/services.md); the same on every server")
	cmd.Flags().DurationVar(&f.dependencyGC, "dependency-gc", daemon.DefaultDependencyGC, "how long a dependency pod without dependents is kept before it is removed")
	cmd.Flags().IntVar(&f.wfPerNS, "workflows-per-namespace", 0, "the most workflows running at once in one namespace (0: no limit); the others wait Pending")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "serving certificate file (PEM) instead of one from the cluster CA; read again when it changes")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "the serving certificate's key file (with --tls-cert)")
	cmd.Flags().StringSliceVar(&f.tlsSANs, "tls-san", nil, "more names and addresses the server's certificate is valid for (the listen address, host name and loopback always are)")
	cmd.Flags().StringVar(&f.insecure, "insecure-listen", "", "also serve the API over plain HTTP on this loopback address (development only)")
	cmd.Flags().IntVar(&f.maxConns, "max-connections", 0, "most API connections open at once; more wait (0: the file descriptor limit less 1024)")
	cmd.Flags().IntVar(&f.maxConnsSrc, "max-connections-per-source", 0, "most API connections of one source address; more are closed at once (0: half of --max-connections)")
	cmd.Flags().IntVar(&f.seats.Agents, "api-agent-seats", server.DefaultAgentSeats, "requests of agents (node certificates) the API serves at once; more queue, a queue per node (docs/security.md, Seats and queues)")
	cmd.Flags().IntVar(&f.seats.Servers, "api-server-seats", server.DefaultServerSeats, "requests of other servers (server certificates) the API serves at once; more queue")
	cmd.Flags().IntVar(&f.seats.Users, "api-user-seats", server.DefaultUserSeats, "requests of users (tokens, users' certificates, anonymous) the API serves at once; more queue, a queue per token or source, served in turn")
	cmd.Flags().DurationVar(&f.seats.Wait, "api-queue-wait", server.DefaultSeatWait, "longest a request waits for a seat before it is refused with 429")
	cmd.Flags().StringVar(&f.auditLog, "audit-log", "", "file of the audit log, a JSON line per write, exec, logs and secret read (default DATA-DIR/audit.log; off for none)")
	cmd.Flags().StringVar(&f.auditMaxSize, "audit-log-max-size", "100MiB", "size past which the audit log is rotated")
	cmd.Flags().IntVar(&f.auditMaxFiles, "audit-log-max-files", 5, "rotated audit log files kept")
	cmd.Flags().DurationVar(&f.certLifetime, "cert-lifetime", pki.CertLifetime, "how long the certificates the server issues (its own, the nodes') are valid; each is renewed two thirds into it")
	cmd.Flags().StringVar(&f.bcsClusterID, "bcs-cluster-id", "", "the BCS-ClusterID that BCS's API accepts (docs/compat.md; default: any)")
	cmd.Flags().StringVar(&f.otlpEndpoint, "otlp-endpoint", "", otlpEndpointHelp)
	cmd.Flags().BoolVar(&f.subMinute, AllowSubMinuteFlag, false, "admit cronjob and cronworkflow schedules that fire more than once a minute (@every 2s): fast test schedules (docs/cron.md)")
	f.etcd.register(cmd)
	f.retention.register(cmd)
}

func newServerCommand(o *options) *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a berth API server",
		Long: "Run a berth API server. State is kept in an embedded etcd under --data-dir,\n" +
			"or in an external etcd cluster given with --etcd-endpoints.",
		Example: "  berth server --data-dir /var/lib/berth\n" +
			"  berth server --listen 0.0.0.0:7470 --etcd-endpoints http://etcd-0:2379,http://etcd-1:2379 --data-dir /var/lib/berth\n" +
			"  # three servers with one embedded etcd cluster (docs/ha.md):\n" +
			"  berth server --data-dir /var/lib/berth --listen 10.0.0.1:7470 --etcd-name s1 --etcd-peer-listen 10.0.0.1:2380 --etcd-client-listen 10.0.0.1:2379\n" +
			"  berth server --data-dir /var/lib/berth --listen 10.0.0.2:7470 --etcd-name s2 --etcd-peer-listen 10.0.0.2:2380 --etcd-client-listen 10.0.0.2:2379 \\\n" +
			"      --join-token-file /etc/berth/join-token --join 10.0.0.1:7470   # the file: s1's DATA-DIR/join-token",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dataDir == "" && len(f.etcdEndpoints) == 0 {
				return fmt.Errorf("give --data-dir (embedded etcd) or --etcd-endpoints (external etcd)")
			}
			token, err := f.readJoinToken()
			if err != nil {
				return err
			}
			return runServer(cmd, o, f, token, func(addr string) {
				fmt.Fprintf(o.out(), "berth server listening on %s\n", addr)
			})
		},
	}
	f.register(cmd, "directory of the embedded etcd's data")
	cmd.Flags().StringSliceVar(&f.etcdEndpoints, "etcd-endpoints", nil, "external etcd endpoints, comma separated (instead of the embedded etcd)")
	cmd.Flags().StringVar(&f.etcdCA, "etcd-cacert", "", "CA certificate that verifies the external etcd (https:// endpoints)")
	cmd.Flags().StringVar(&f.etcdCert, "etcd-cert", "", "client certificate berth presents to the external etcd")
	cmd.Flags().StringVar(&f.etcdKey, "etcd-key", "", "the key of --etcd-cert")
	cmd.Flags().StringVar(&f.joinToken, "join-token", "", "a server join token berth-<id>.<secret> the cluster should know (prefer --join-token-file); with --join, the token to join with. Without one, the first start writes one to DATA-DIR/join-token")
	cmd.Flags().StringVar(&f.joinTokenFile, "join-token-file", "", "file holding the join token (a server's DATA-DIR/join-token is one)")
	cmd.MarkFlagsMutuallyExclusive("join-token", "join-token-file")
	f.member.register(cmd)
	return cmd
}

func newDevCommand(o *options) *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local single-node berth with its data in one directory",
		Long: "Run a local berth for development: a server with an embedded etcd and a node agent\n" +
			"for this machine in one process, its data in --data-dir (default $HOME/.berth/dev, or\n" +
			rootDevDataDir + " for root).\n" +
			"Stop it with Ctrl-C (the agent stops first; workloads keep running and are adopted\n" +
			"at the next start); the data stays.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dataDir == "" {
				dir, err := defaultDevDataDir(o.env)
				if err != nil {
					return err
				}
				f.dataDir = dir
			}
			// 0711: the agent's data dir is inside, and processes with a user must pass
			// through to their work dirs (docs/agent.md, "Data directory"); nobody else can
			// list it, and what holds secrets is closed itself (etcd/ 0700, files 0600).
			if err := os.MkdirAll(f.dataDir, devDataDirMode); err != nil {
				return fmt.Errorf("create data dir: %w", err)
			}
			if err := os.Chmod(f.dataDir, devDataDirMode); err != nil {
				return fmt.Errorf("data dir: %w", err)
			}
			return runDev(cmd, o, f)
		},
	}
	f.register(cmd, "data directory (default $HOME/.berth/dev; "+rootDevDataDir+" for root)")
	cmd.Flags().BoolVar(&f.agent, "agent", true, "run a node agent for this machine in the process (false: the server alone)")
	f.agentGuard.register(cmd)
	f.devNode.register(cmd)
	f.agentLogs.register(cmd)
	f.devDNS.registerDev(cmd)
	return cmd
}

// devDataDirMode is the mode of berth dev's data dir, which holds the server's and the
// agent's.
const devDataDirMode = 0o711

// runServer runs a `berth server` until SIGINT or SIGTERM, logging to stderr.
func runServer(cmd *cobra.Command, o *options, f serverFlags, joinToken string, onReady func(addr string)) error {
	cfg, err := f.serverConfig(o, joinToken, onReady)
	if err != nil {
		return err
	}
	cfg.OnManagementToken = func(token string) {
		fmt.Fprintf(o.out(), "\nThe cluster's management token (every right; shown once, also in DATA-DIR/%s):\n  %s\n\n", daemon.AdminTokenFile, token)
	}
	p := daemon.Process{Service: "berth-server", Version: Version, TraceEndpoint: f.otlpEndpoint, Logger: cfg.API.Logger}
	return p.Run(cmdContext(cmd), func(ctx context.Context) error { return daemon.RunServer(ctx, cfg) })
}

// serverConfig checks the flags and builds the server's config, logging to stderr.
func (f serverFlags) serverConfig(o *options, joinToken string, onReady func(addr string)) (daemon.ServerConfig, error) {
	auditMax, err := parseBytes(f.auditMaxSize)
	if err != nil || auditMax < 1<<20 {
		return daemon.ServerConfig{}, fmt.Errorf("--audit-log-max-size %q: a size of at least 1MiB", f.auditMaxSize)
	}
	if f.auditMaxFiles < 1 || f.auditMaxFiles > 1000 {
		return daemon.ServerConfig{}, fmt.Errorf("--audit-log-max-files %d: 1 to 1000", f.auditMaxFiles)
	}
	if f.certLifetime < time.Minute {
		return daemon.ServerConfig{}, fmt.Errorf("--cert-lifetime %s: at least 1m", f.certLifetime)
	}
	maxBeats, err := f.checkLoadLimits()
	if err != nil {
		return daemon.ServerConfig{}, err
	}
	if f.placement != "spread" && f.placement != "binpack" {
		return daemon.ServerConfig{}, fmt.Errorf("--placement %q: use spread or binpack", f.placement)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return daemon.ServerConfig{}, fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(o.env.stderr, &slog.HandlerOptions{Level: level}))
	etcd, err := f.etcdConfig()
	if err != nil {
		return daemon.ServerConfig{}, err
	}
	member, err := f.member.config(f, joinToken, o, log)
	if err != nil {
		return daemon.ServerConfig{}, err
	}
	cidr, err := netip.ParsePrefix(f.serviceCIDR)
	if err != nil || !cidr.Addr().Is4() || cidr.Bits() > 30 {
		return daemon.ServerConfig{}, fmt.Errorf("--service-cidr %q: give an IPv4 range such as %s (a /30 or larger)", f.serviceCIDR, daemon.DefaultServiceCIDR)
	}
	return daemon.ServerConfig{
		API: server.Config{
			AllowSubMinuteSchedules:       f.subMinute,
			Listen:                        f.listen,
			Logger:                        log,
			Placement:                     f.placement,
			BCSClusterID:                  f.bcsClusterID,
			PackagesDir:                   f.packagesDir,
			ArtifactAllowPrivateEndpoints: f.artifactPrivate,
			TLSCertFile:                   f.tlsCert,
			TLSKeyFile:                    f.tlsKey,
			TLSSANs:                       f.tlsSANs,
			MaxConnections:                f.maxConns,
			MaxConnectionsPerSource:       f.maxConnsSrc,
			APISeats:                      f.seats,
			CertLifetime:                  f.certLifetime,
			NodeTTL:                       f.nodeTTL,
			MaxHeartbeatsPerSecond:        maxBeats,
		},
		Etcd:                  etcd,
		Member:                member,
		DataDir:               f.dataDir,
		EncryptionKeyFile:     f.keyFile,
		OnReady:               onReady,
		JoinToken:             joinToken,
		InsecureListen:        f.insecure,
		AuditLogFile:          f.auditLog,
		AuditLogMaxBytes:      auditMax,
		AuditLogMaxFiles:      f.auditMaxFiles,
		DependencyGC:          f.dependencyGC,
		WorkflowsPerNamespace: f.wfPerNS,
		WorkflowArchive:       f.retention.workflowArchive(),
		ServiceCIDR:           cidr,
	}, nil
}

// etcdConfig checks the flags of the store and of what it keeps, and builds its config.
func (f serverFlags) etcdConfig() (daemon.EtcdConfig, error) {
	quota, err := f.etcd.quotaBytes(len(f.etcdEndpoints) > 0)
	if err != nil {
		return daemon.EtcdConfig{}, err
	}
	if err := errors.Join(f.etcd.checkInterval(), f.retention.check()); err != nil {
		return daemon.EtcdConfig{}, err
	}
	return daemon.EtcdConfig{Endpoints: f.etcdEndpoints, CAFile: f.etcdCA, CertFile: f.etcdCert, KeyFile: f.etcdKey,
		QuotaBytes: quota, CompactionInterval: f.etcd.compactionInterval, EventTTL: f.retention.eventTTL}, nil
}

// checkLoadLimits checks the flags that bound the API's load: the heartbeats a second
// (returned as the server takes it: -1 for no bound) and the seats of each class.
func (f serverFlags) checkLoadLimits() (maxBeats float64, err error) {
	maxBeats = f.maxBeats
	switch {
	case maxBeats < 0 || math.IsNaN(maxBeats) || math.IsInf(maxBeats, 0):
		return 0, fmt.Errorf("--max-heartbeats-per-second %v: give a number of beats a second, or 0 for no bound", f.maxBeats)
	case maxBeats == 0:
		maxBeats = -1 // the server's "no bound"
	}
	for _, s := range []struct {
		flag string
		n    int
	}{{"--api-agent-seats", f.seats.Agents}, {"--api-server-seats", f.seats.Servers}, {"--api-user-seats", f.seats.Users}} {
		if s.n < 1 {
			return 0, fmt.Errorf("%s %d: give at least 1", s.flag, s.n)
		}
	}
	if f.seats.Wait <= 0 {
		return 0, fmt.Errorf("--api-queue-wait %s: give a positive duration", f.seats.Wait)
	}
	return maxBeats, nil
}

// readJoinToken returns --join-token, or the trimmed content of --join-token-file.
func (f serverFlags) readJoinToken() (string, error) {
	if f.joinTokenFile == "" {
		return f.joinToken, nil
	}
	b, err := os.ReadFile(f.joinTokenFile)
	if err != nil {
		return "", fmt.Errorf("--join-token-file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("--join-token-file %s is empty", f.joinTokenFile)
	}
	return t, nil
}

// rootDevDataDir is berth dev's data dir for root. Root's home is closed to other users
// (0700), and the agent runs processes without a user as an unprivileged one, which must
// pass through to their work dirs.
const rootDevDataDir = "/var/lib/berth/dev"

// defaultDevDataDir is berth dev's data dir when --data-dir is not given.
func defaultDevDataDir(e *env) (string, error) {
	if os.Geteuid() == 0 {
		return rootDevDataDir, nil
	}
	home, err := e.home()
	if err != nil {
		return "", fmt.Errorf("no home directory for the default data dir; give --data-dir: %w", err)
	}
	return filepath.Join(home, ".berth", "dev"), nil
}
