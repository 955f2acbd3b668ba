package gpu

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// vcudaProto is gpu-manager's api.proto (package vcuda), built as a descriptor so the
// test's client speaks real protobuf, as gpu-client does.
func vcudaProto(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	str := func(name string, n int32) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n),
			Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("api.proto"), Package: proto.String("vcuda"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("VDeviceRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				str("bus_id", 1), str("pod_uid", 2), str("container_name", 3), str("container_id", 4), str("future", 9)}},
			{Name: proto.String("VDeviceResponse")},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestVCUDAService(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "vcuda.sock")
	var mu sync.Mutex
	var got []VDeviceRequest
	srv, err := ServeVCUDA(socket, func(_ context.Context, req *VDeviceRequest) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, *req)
		if req.ContainerID == "refuse" {
			return context.DeadlineExceeded
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fd := vcudaProto(t)
	reqDesc := fd.Messages().ByName("VDeviceRequest")
	call := func(fields map[string]string) error {
		req := dynamicpb.NewMessage(reqDesc)
		for k, v := range fields {
			req.Set(reqDesc.Fields().ByName(protoreflect.Name(k)), protoreflect.ValueOfString(v))
		}
		resp := dynamicpb.NewMessage(fd.Messages().ByName("VDeviceResponse"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return conn.Invoke(ctx, "/vcuda.VCUDAService/RegisterVDevice", req, resp)
	}
	if err := call(map[string]string{"bus_id": "0000:07:00.0", "pod_uid": "uid-1", "container_id": "abc", "future": "ignored"}); err != nil {
		t.Fatal(err)
	}
	if err := call(map[string]string{"pod_uid": "uid-1", "container_name": "/worker"}); err != nil {
		t.Fatal(err)
	}
	if err := call(map[string]string{"container_id": "refuse"}); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("a refused registration: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []VDeviceRequest{{BusID: "0000:07:00.0", PodUID: "uid-1", ContainerID: "abc"}, {PodUID: "uid-1", ContainerName: "/worker"}, {ContainerID: "refuse"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := ServeVCUDA(strings.Repeat("/x", 60), nil); err == nil {
		t.Fatal("a socket path past sun_path accepted")
	}
}
