module github.com/berthhq/berth

go 1.26.6

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // GPU fingerprints and XID health through NVML, loaded at run time (internal/devices/gpu)
	github.com/chromedp/cdproto v0.159.0 // key events for the console's terminal in those tests
	github.com/chromedp/chromedp v0.23.0 // the web console's tests drive a real Chromium through the DevTools protocol (test/e2e)
	github.com/container-storage-interface/spec v1.13.0 // the CSI v1 gRPC services berth calls on storage plugins (internal/csi); its generated code only, needs grpc ≥ 1.79 which we have
	github.com/containerd/cgroups/v3 v3.1.3
	github.com/containerd/containerd/api v1.12.0 // the runc shim's options (BinaryName: runc or crun) and the task events the containerd driver reads
	github.com/containerd/containerd/v2 v2.4.2 // the containerd driver's client (internal/driver/containerd): 2.4 is built on the runtime-spec, cgroups, grpc and otel versions berth already has (1.7.x does not build with runtime-spec 1.3); its client works with Debian's containerd 1.6 (docs/runtimes.md)
	github.com/containerd/errdefs v1.0.0
	github.com/containerd/log v0.2.0 // the logger containerd's client reads from a context: the containerd driver's pulls give it one that writes to slog; already in the graph
	github.com/containerd/typeurl/v2 v2.3.0 // decodes containerd's event envelopes
	github.com/containernetworking/cni v1.3.1
	github.com/distribution/reference v0.6.0 // image names as Docker resolves them (busybox = docker.io/library/busybox:latest), already in the graph through the Docker client
	github.com/docker/go-connections v0.8.2 // the Docker client's transport, set up as the client does (internal/driver/docker/legacymac.go); the version client v0.6.3 requires
	github.com/docker/go-units v0.5.0
	github.com/google/nftables v0.3.0 // the service proxy's table, written over netlink in one transaction (internal/netsvc)
	github.com/evanphx/json-patch/v5 v5.9.11 // RFC 6902 patches of mutating admission webhooks, as Kubernetes applies them (internal/webhook; docs/dependencies.md)
	github.com/gorilla/websocket v1.5.4-0.20250319132907-e064f32e3674 // the web console's exec terminal; already in the module graph through etcd (internal/server)
	github.com/johannesboyne/gofakes3 v1.2.0 // a real S3 protocol server on loopback for the tests of internal/artifacts, never a mock of the client (docs/dependencies.md)
	github.com/mdlayher/netlink v1.7.3-0.20250113171957-fbb4dce95f42 // the socket buffers and deadline of those transactions
	github.com/miekg/dns v1.1.73 // the node-local cluster DNS server and its forwarder (internal/netsvc)
	github.com/minio/minio-go/v7 v7.4.1 // the S3 client of artifactrepository (internal/artifacts; docs/dependencies.md says why this one)
	github.com/moby/moby/api v1.57.0 // Docker's API types; the version client v0.6.3 requires, so the two are built against each other
	github.com/moby/moby/client v0.6.3 // the Docker driver's client (internal/driver/docker), the maintained successor of github.com/docker/docker/client; negotiates down to API 1.40, so a 20.10 daemon (1.41) works
	github.com/moby/sys/signal v0.7.1 // an image's stop signal by name, as containerd records it
	github.com/opencontainers/go-digest v1.0.0 // content digests of the containerd driver's pull progress; already in the graph through containerd
	github.com/opencontainers/image-spec v1.1.1 // image descriptors the containerd driver's pull reads; already in the graph through containerd
	github.com/opencontainers/runtime-spec v1.3.0
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3 // the gathered families the etcd metrics route filters (internal/server)
	github.com/sirupsen/logrus v1.10.2 // containerd/log's logger type (that hook to slog); already in the graph
	github.com/spf13/cobra v1.10.2
	go.etcd.io/etcd/api/v3 v3.7.3
	go.etcd.io/etcd/client/pkg/v3 v3.7.3
	go.etcd.io/etcd/client/v3 v3.7.3
	go.etcd.io/etcd/server/v3 v3.7.3
	go.opentelemetry.io/otel v1.46.0 // traces of a change across server, controllers and agents; the version etcd already brings (internal/tracing)
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.46.0 // the OTLP exporter, off unless configured
	go.opentelemetry.io/otel/sdk v1.46.0 // the tracer provider, and tracetest in the tests
	go.opentelemetry.io/otel/trace v1.46.0
	go.opentelemetry.io/proto/otlp v1.11.0 // the collector service a test exports to
	go.uber.org/zap v1.28.0
	go.yaml.in/yaml/v3 v3.0.5 // manifests, config files and -o yaml; the maintained home of gopkg.in/yaml.v3, same API
	golang.org/x/crypto v0.58.0 // bcrypt for the htpasswd of the private registry the tests run (internal/testutil/registry); already required by etcd and the Docker client
	golang.org/x/net v0.61.0 // HTTP/2 frames: a test reads the limits the server announces (internal/server); already in the module graph
	golang.org/x/sys v0.49.0 // pidfd_open and poll: waiting for a task's process without polling
	google.golang.org/grpc v1.83.2
	google.golang.org/protobuf v1.36.12 // gpu-manager's VCUDAService messages, read with protowire (internal/devices/gpu)
	k8s.io/kubelet v0.37.2 // the device-plugin API (v1beta1) Kubernetes' device plugins register with (internal/devices/plugin)
)

require (
	github.com/Microsoft/go-winio v0.6.4 // indirect
	github.com/Microsoft/hcsshim v0.15.0-rc.4 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cilium/ebpf v0.17.3 // indirect
	github.com/containerd/continuity v0.5.0 // indirect
	github.com/containerd/errdefs/pkg v0.3.0 // indirect
	github.com/containerd/fifo v1.1.0 // indirect
	github.com/containerd/log/otel v0.1.0 // indirect
	github.com/containerd/platforms v1.0.0-rc.5 // indirect
	github.com/containerd/plugin v1.1.0 // indirect
	github.com/containerd/ttrpc v1.2.9 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/felixge/httpsnoop v1.1.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/godbus/dbus/v5 v5.1.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus v1.1.0 // indirect
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.3 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.30.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mdlayher/socket v0.6.0 // indirect
	github.com/moby/docker-image-spec v1.3.1 // indirect
	github.com/moby/locker v1.0.1 // indirect
	github.com/moby/sys/mountinfo v0.7.2 // indirect
	github.com/moby/sys/user v0.4.1 // indirect
	github.com/moby/sys/userns v0.2.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect; the hosts.toml parser of containerd's hosts directory (core/remotes/docker/config), read by the containerd driver's pulls
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/soheilhy/cmux v0.1.5 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/tmc/grpc-websocket-proxy v0.0.0-20220101234140-673ab2c3ae75 // indirect
	github.com/xiang90/probing v0.0.0-20221125231312-a49e3df8f510 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.etcd.io/etcd/pkg/v3 v3.7.3 // indirect
	go.etcd.io/raft/v3 v3.7.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.71.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.71.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.46.0 // indirect
	go.opentelemetry.io/otel/metric v1.46.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260825221802-da73d73af1c5 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260825221802-da73d73af1c5 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

require (
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/klauspost/crc32 v1.3.0 // indirect
	github.com/minio/crc64nvme v1.1.1 // indirect
	github.com/minio/md5-simd v1.1.2 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/rs/xid v1.6.0 // indirect
	github.com/ryszard/goskiplist v0.0.0-20150312221310-2dfbae5fcf46 // indirect
	github.com/tinylib/msgp v1.6.4 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.shabbyrobe.org/gocovmerge v0.0.0-20230507111327-fa4f82cfbf4d // indirect
	golang.org/x/tools v0.51.0 // indirect
	gopkg.in/ini.v1 v1.67.3 // indirect
)
