package params

import (
	"testing"

	"github.com/berthhq/berth/internal/driver"
)

func TestMB(t *testing.T) {
	for _, c := range []struct {
		v         string
		unlimited bool
		want      int64
		wantErr   bool
	}{
		{"64", false, 64 << 20, false},
		{"1.5", false, 3 << 19, false},
		{"128m", false, 128 << 20, false},
		{"1g", false, 1 << 30, false},
		{"-1", true, -1, false},
		{"-1", false, 0, true},
		{"1e30", false, 0, true},
		{"lots", false, 0, true},
	} {
		got, err := MB(c.v, c.unlimited)
		if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
			t.Errorf("MB(%q, %v) = %d, %v; want %d (error %v)", c.v, c.unlimited, got, err, c.want, c.wantErr)
		}
	}
}

func TestDevice(t *testing.T) {
	for _, c := range []struct {
		v       string
		want    driver.Device
		wantErr bool
	}{
		{"/dev/fuse", driver.Device{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}, false},
		{"/dev/fuse:rw", driver.Device{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rw"}, false},
		{"/dev/null:/dev/x", driver.Device{HostPath: "/dev/null", ContainerPath: "/dev/x", Permissions: "rwm"}, false},
		{"/dev/null:/dev/x:r", driver.Device{HostPath: "/dev/null", ContainerPath: "/dev/x", Permissions: "r"}, false},
		{"dev/null", driver.Device{}, true},
		{"/dev/null:x", driver.Device{}, true},
		{"/dev/null:/dev/x:rwx", driver.Device{}, true},
		{"/a:/b:r:w", driver.Device{}, true},
	} {
		got, err := Device(c.v)
		if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
			t.Errorf("Device(%q) = %+v, %v; want %+v (error %v)", c.v, got, err, c.want, c.wantErr)
		}
	}
}

func TestSmallParsers(t *testing.T) {
	if n, err := IntRange("-1000", -1000, 1000); err != nil || n != -1000 {
		t.Errorf("IntRange: %d %v", n, err)
	}
	if _, err := IntRange("1001", -1000, 1000); err == nil {
		t.Error("IntRange out of range accepted")
	}
	if b, err := Bool(""); err != nil || !b {
		t.Errorf("a bare flag: %v %v", b, err)
	}
	if got := List(" a, ,b "); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("List = %q", got)
	}
	if _, err := Addrs([]string{"fe80::1%eth0"}); err == nil {
		t.Error("a scoped resolver address accepted")
	}
	var m map[string]string
	if err := SetKV(&m, "a=b=c"); err != nil || m["a"] != "b=c" {
		t.Errorf("SetKV: %v %v", m, err)
	}
	if err := SetKV(&m, "=x"); err == nil {
		t.Error("an empty key accepted")
	}
	if Key("--cap-add") != "cap-add" || !ReservedLabel("berth.node") || ReservedLabel("app") {
		t.Error("Key or ReservedLabel")
	}
}
