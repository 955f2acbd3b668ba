// Package plugin serves kubelet's device-plugin Registration API (v1beta1) on a node, so
// the device plugins written for Kubernetes (NVIDIA's, FPGA, RDMA, ...) register their
// resources with berth's agent: their devices become the node's extended resources, and a
// task that asks for them gets the devices, mounts and env the plugin's Allocate answers.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Bounds of what a plugin may say: a node's resources are stored with the node.
const (
	maxResources        = 64
	maxDevicesPerPlugin = 1024
	maxIDLen            = 256
	callTimeout         = 30 * time.Second
)

// resourceNamePattern is a Kubernetes extended resource name: "vendor-domain/type".
var resourceNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// Options configure a Manager.
type Options struct {
	// Dir holds the Registration socket (kubelet.sock) and the plugins' sockets.
	Dir string
	// Reserved names resources the node owns itself (berth's GPUs): plugins may not
	// register them.
	Reserved func(resource string) bool
	// Changed is called when the resources change (the node is registered again).
	Changed func()
	// Held, when set, is told every device a task holds after AllocateTask gives it its
	// devices (group is the task group's namespace/name), so that the agent's
	// checkpoint can Restore them after a restart.
	Held   func(group, task string, held map[string][]string)
	Logger *slog.Logger
}

// Manager serves the Registration socket and keeps the registered plugins.
type Manager struct {
	dir      string
	reserved func(resource string) bool
	log      *slog.Logger
	changed  func()
	held     func(group, task string, held map[string][]string)

	mu      sync.Mutex
	plugins map[string]*registered // by resource name
	// allocated are the devices given to tasks, by resource and device ID -> task ID.
	allocated map[string]map[string]string
	wg        sync.WaitGroup
}

// registered is one plugin and the devices it last listed.
type registered struct {
	resource string
	conn     *grpc.ClientConn
	client   pluginapi.DevicePluginClient
	opts     *pluginapi.DevicePluginOptions
	devices  map[string]string // ID -> health
	cancel   context.CancelFunc
}

// NewManager makes a manager serving Options.Dir/kubelet.sock.
func NewManager(opts Options) *Manager {
	reserved := opts.Reserved
	if reserved == nil {
		reserved = func(string) bool { return false }
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Manager{dir: opts.Dir, reserved: reserved, changed: opts.Changed, held: opts.Held, log: log,
		plugins: map[string]*registered{}, allocated: map[string]map[string]string{}}
}

// Socket is the Registration socket's path.
func (m *Manager) Socket() string {
	return filepath.Join(m.dir, filepath.Base(pluginapi.KubeletSocket))
}

// Run serves the Registration API until ctx ends, then closes every plugin's connection.
func (m *Manager) Run(ctx context.Context) error {
	if err := os.MkdirAll(m.dir, 0o750); err != nil {
		return fmt.Errorf("device plugins: %w", err)
	}
	sock := m.Socket()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("device plugins: %w", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("device plugins: %w", err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, &registration{m: m, ctx: ctx})
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	m.log.Info("serving device plugin registrations", "socket", sock)
	<-ctx.Done()
	srv.Stop()
	<-done
	m.mu.Lock()
	for name, p := range m.plugins {
		p.close()
		delete(m.plugins, name)
	}
	m.mu.Unlock()
	m.wg.Wait()
	os.Remove(sock)
	return nil
}

// registration is the Registration service.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	m   *Manager
	ctx context.Context
}

// Register takes a plugin: it is dialled back on its endpoint (a socket in the same
// directory), its options read, and its devices watched.
func (r *registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	m := r.m
	switch {
	case !slices.Contains(pluginapi.SupportedVersions[:], req.Version):
		return nil, fmt.Errorf("version %q: this node speaks %v", req.Version, pluginapi.SupportedVersions)
	case !resourceNamePattern.MatchString(req.ResourceName) || len(req.ResourceName) > 253:
		return nil, fmt.Errorf("resource name %q: must be vendor-domain/type", req.ResourceName)
	case m.reserved(req.ResourceName):
		return nil, fmt.Errorf("resource %s is this node's own (berth fingerprints its GPUs itself)", req.ResourceName)
	case req.Endpoint == "" || filepath.Base(req.Endpoint) != req.Endpoint:
		return nil, fmt.Errorf("endpoint %q: must be a socket name in %s", req.Endpoint, m.dir)
	}
	m.mu.Lock()
	_, known := m.plugins[req.ResourceName]
	full := !known && len(m.plugins) >= maxResources
	m.mu.Unlock()
	if full {
		return nil, fmt.Errorf("this node takes at most %d device plugin resources", maxResources)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(m.dir, req.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", req.Endpoint, err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	p := &registered{resource: req.ResourceName, conn: conn, client: pluginapi.NewDevicePluginClient(conn),
		opts: req.Options, devices: map[string]string{}, cancel: cancel}
	if p.opts == nil {
		p.opts = &pluginapi.DevicePluginOptions{}
	}
	m.mu.Lock()
	if old := m.plugins[p.resource]; old != nil {
		old.close() // a plugin that restarted registers again
	}
	m.plugins[p.resource] = p
	m.mu.Unlock()
	m.log.Info("device plugin registered", "resource", p.resource, "endpoint", req.Endpoint)
	m.wg.Go(func() { m.watch(ctx, p) })
	return &pluginapi.Empty{}, nil
}

func (p *registered) close() {
	p.cancel()
	p.conn.Close()
}

// watch follows the plugin's ListAndWatch until it ends; the plugin is then gone (it
// registers again when it comes back).
func (m *Manager) watch(ctx context.Context, p *registered) {
	defer m.drop(p)
	stream, err := p.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		m.log.Warn("device plugin: ListAndWatch failed", "resource", p.resource, "err", err)
		return
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("device plugin went away", "resource", p.resource, "err", err)
			}
			return
		}
		devices := map[string]string{}
		for _, d := range resp.Devices {
			if len(devices) >= maxDevicesPerPlugin {
				m.log.Warn("device plugin lists too many devices; the rest are ignored", "resource", p.resource, "max", maxDevicesPerPlugin)
				break
			}
			if d.ID == "" || len(d.ID) > maxIDLen {
				continue
			}
			devices[d.ID] = d.Health
		}
		m.mu.Lock()
		same := m.plugins[p.resource] == p && maps.Equal(p.devices, devices)
		if m.plugins[p.resource] == p {
			p.devices = devices
		}
		m.mu.Unlock()
		if !same && m.changed != nil {
			m.changed()
		}
	}
}

// drop forgets a plugin whose stream ended (unless another took its place).
func (m *Manager) drop(p *registered) {
	m.mu.Lock()
	gone := m.plugins[p.resource] == p
	if gone {
		delete(m.plugins, p.resource)
	}
	m.mu.Unlock()
	p.close()
	if gone && m.changed != nil {
		m.changed()
	}
}

// Resources returns each plugin resource's device count and healthy device count.
func (m *Manager) Resources() (capacity, allocatable map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity, allocatable = map[string]float64{}, map[string]float64{}
	for name, p := range m.plugins {
		capacity[name] = float64(len(p.devices))
		healthy := 0
		for _, h := range p.devices {
			if h == pluginapi.Healthy {
				healthy++
			}
		}
		allocatable[name] = float64(healthy)
	}
	return capacity, allocatable
}

// Has reports whether a plugin serves the resource.
func (m *Manager) Has(resource string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plugins[resource] != nil
}
