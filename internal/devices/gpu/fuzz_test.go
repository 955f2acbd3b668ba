package gpu

import "testing"

// FuzzVCUDARequest: any bytes a container's gpu-client (or anything that reaches the
// socket) sends decode without a panic, and what decodes encodes back to itself.
func FuzzVCUDARequest(f *testing.F) {
	seed, _ := vcudaCodec{}.Marshal(&VDeviceRequest{BusID: "0000:07:00.0", PodUID: "uid", ContainerName: "/c", ContainerID: "abc"})
	f.Add(seed)
	f.Add([]byte{0x4a, 0x03, 'x', 'y', 'z'})               // an unknown field 9
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'}) // a length past the end
	f.Fuzz(func(t *testing.T, data []byte) {
		var req VDeviceRequest
		if err := (vcudaCodec{}).Unmarshal(data, &req); err != nil {
			return
		}
		b, err := vcudaCodec{}.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		var again VDeviceRequest
		if err := (vcudaCodec{}).Unmarshal(b, &again); err != nil || again != req {
			t.Fatalf("round trip: %+v -> %+v (%v)", req, again, err)
		}
	})
}
