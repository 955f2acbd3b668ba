package gpu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
)

// gpu-manager's VCUDAService (package vcuda): libcuda-control.so runs gpu-client, which
// calls RegisterVDevice on /etc/vcuda/vcuda.sock when a process of a share first uses
// CUDA; the server then writes the container's pids.config (and vcuda.config when it is
// missing). Its messages are four strings and nothing, so they are read and written with
// protowire rather than generated code.

// VDeviceRequest is vcuda.VDeviceRequest.
type VDeviceRequest struct {
	BusID         string // field 1
	PodUID        string // field 2
	ContainerName string // field 3
	ContainerID   string // field 4
}

// vdeviceResponse is vcuda.VDeviceResponse (empty).
type vdeviceResponse struct{}

// vcudaCodec is the proto codec for the two messages.
type vcudaCodec struct{}

func (vcudaCodec) Name() string { return "proto" }

func (vcudaCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *vdeviceResponse:
		return nil, nil
	case *VDeviceRequest:
		var b []byte
		for i, s := range []string{m.BusID, m.PodUID, m.ContainerName, m.ContainerID} {
			if s != "" {
				b = protowire.AppendTag(b, protowire.Number(i+1), protowire.BytesType)
				b = protowire.AppendString(b, s)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("vcuda: cannot encode %T", v)
}

func (vcudaCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *vdeviceResponse:
		return nil
	case *VDeviceRequest:
		fields := []*string{&m.BusID, &m.PodUID, &m.ContainerName, &m.ContainerID}
		for len(data) > 0 {
			num, typ, n := protowire.ConsumeTag(data)
			if n < 0 {
				return fmt.Errorf("vcuda: bad request: %w", protowire.ParseError(n))
			}
			data = data[n:]
			if typ == protowire.BytesType && num >= 1 && int(num) <= len(fields) {
				s, n := protowire.ConsumeString(data)
				if n < 0 {
					return fmt.Errorf("vcuda: bad request field %d: %w", num, protowire.ParseError(n))
				}
				*fields[num-1] = s
				data = data[n:]
				continue
			}
			n = protowire.ConsumeFieldValue(num, typ, data) // an unknown field: skip it
			if n < 0 {
				return fmt.Errorf("vcuda: bad request field %d: %w", num, protowire.ParseError(n))
			}
			data = data[n:]
		}
		return nil
	}
	return fmt.Errorf("vcuda: cannot decode into %T", v)
}

// vcudaRegistrar is the service's handler type.
type vcudaRegistrar interface {
	RegisterVDevice(ctx context.Context, req *VDeviceRequest) error
}

type registerFunc func(ctx context.Context, req *VDeviceRequest) error

func (f registerFunc) RegisterVDevice(ctx context.Context, req *VDeviceRequest) error {
	return f(ctx, req)
}

var vcudaServiceDesc = grpc.ServiceDesc{
	ServiceName: "vcuda.VCUDAService",
	HandlerType: (*vcudaRegistrar)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "RegisterVDevice",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := &VDeviceRequest{}
			if err := dec(req); err != nil {
				return nil, err
			}
			if err := srv.(vcudaRegistrar).RegisterVDevice(ctx, req); err != nil {
				return nil, err
			}
			return &vdeviceResponse{}, nil
		},
	}},
	Metadata: "api.proto",
}

// VCUDAServer serves VCUDAService on one share's socket.
type VCUDAServer struct {
	srv  *grpc.Server
	ln   net.Listener
	done chan struct{}
}

// maxSocketPath is what sun_path holds of a unix socket's path.
const maxSocketPath = 107

// ServeVCUDA listens on socket (sun_path allows 107 bytes) and calls register for each
// RegisterVDevice until Close. The socket is 0660: only its owner and group may call it
// (anyone could, at 0777, and each call makes the agent ask Docker for the container's
// processes). A new socket is root's until the container's driver gives it to the
// container's user with the task's files (driver.ContainerSetup.OwnedFiles); a stale one (left by
// a previous agent, whose Close keeps it) is replaced with the same owner, so a running
// container keeps its access across agent restarts.
func ServeVCUDA(socket string, register func(ctx context.Context, req *VDeviceRequest) error) (*VCUDAServer, error) {
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("vcuda socket %s: longer than a unix socket path may be (%d bytes)", socket, maxSocketPath)
	}
	uid, gid := -1, -1
	if fi, err := os.Lstat(socket); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode()&os.ModeSocket != 0 {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("vcuda socket: %w", err)
	}
	ln, err := listenPrivate(socket, uid, gid)
	if err != nil {
		return nil, fmt.Errorf("vcuda socket %s: %w", socket, err)
	}
	s := &VCUDAServer{srv: grpc.NewServer(grpc.ForceServerCodec(vcudaCodec{})), ln: ln, done: make(chan struct{})}
	s.srv.RegisterService(&vcudaServiceDesc, registerFunc(register))
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns when Close stops the server
	}()
	return s, nil
}

// listenPrivate binds socket with mode 0660 (and uid:gid unless -1) with no moment at
// which another user could connect: the socket is bound in a private directory (0700)
// beside it, given its mode and owner there, and renamed into place, replacing a stale
// one (a bound socket follows its inode). Closing the listener leaves the file.
func listenPrivate(socket string, uid, gid int) (*net.UnixListener, error) {
	tmpDir, err := os.MkdirTemp(filepath.Dir(socket), ".s")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	if len(tmp) > maxSocketPath {
		return nil, fmt.Errorf("the socket's directory is too long a path to bind in (%d bytes)", len(tmp))
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // renamed below: the path Close would remove is not its own
	err = os.Chmod(tmp, 0o660)
	if err == nil && uid >= 0 {
		err = os.Lchown(tmp, uid, gid)
	}
	if err == nil {
		err = os.Rename(tmp, socket)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Close stops the server and waits for it; the socket file stays (ServeVCUDA replaces it).
func (s *VCUDAServer) Close() {
	s.srv.Stop()
	<-s.done
}
