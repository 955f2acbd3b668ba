package containerd

import (
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// The resolver is decided as the Docker driver decides it.
func TestResolver(t *testing.T) {
	cluster := &driver.DNS{Servers: []string{"10.96.0.10"}, Search: []string{"svc.cluster"}, Options: []string{"ndots:5"}}
	host := func() []string { return []string{"192.0.2.53"} }
	for _, c := range []struct {
		name    string
		cluster *driver.DNS
		own     driver.DNS
		want    *driver.DNS
	}{
		{"the host's as it is", nil, driver.DNS{}, nil},
		{"the cluster's", cluster, driver.DNS{}, cluster},
		{"the spec's servers alone", cluster, driver.DNS{Servers: []string{"1.1.1.1"}}, &driver.DNS{Servers: []string{"1.1.1.1"}}},
		{"the spec's search over the cluster's", cluster, driver.DNS{Search: []string{"a.example"}},
			&driver.DNS{Servers: cluster.Servers, Search: []string{"a.example"}, Options: cluster.Options}},
		{"the spec's options with the host's servers", nil, driver.DNS{Options: []string{"rotate"}},
			&driver.DNS{Servers: []string{"192.0.2.53"}, Options: []string{"rotate"}}},
	} {
		if got := resolver(c.cluster, c.own, host); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// add-host lines go over the hosts file the network gave (the host's), or loopback's
// names without one; owned files go to the container's user.
func TestHostsAndOwnedFiles(t *testing.T) {
	d := &Driver{filesDir: t.TempDir()}
	tk := &driver.Task{ID: "ns.tg.web", Container: &v4.Container{}, Setup: &driver.ContainerSetup{}}
	base := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(base, []byte("127.0.0.1 localhost\n10.0.0.1 node1"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := genSpec(t, withBind(base, "/etc/hosts"), d.withHosts(tk, []string{"10.1.2.3\tdb.local"}))
	m := mountAt(s, "/etc/hosts")
	if m == nil || m.Source == base {
		t.Fatalf("hosts mount %+v", m)
	}
	if b, _ := os.ReadFile(m.Source); string(b) != "127.0.0.1 localhost\n10.0.0.1 node1\n10.1.2.3\tdb.local\n" {
		t.Fatalf("hosts file %q", b)
	}
	s, _ = genSpec(t, d.withHosts(tk, []string{"10.1.2.3\tdb.local"}))
	if b, _ := os.ReadFile(mountAt(s, "/etc/hosts").Source); string(b) != defaultHosts+"10.1.2.3\tdb.local\n" {
		t.Fatalf("hosts file without the host's %q", b)
	}

	if os.Geteuid() != 0 {
		return
	}
	sock := filepath.Join(t.TempDir(), "vcuda.sock")
	if err := os.WriteFile(sock, nil, 0o660); err != nil {
		t.Fatal(err)
	}
	p, err := parseParameters([]v4.Parameter{{Key: "user", Value: "1234:5678"}})
	if err != nil {
		t.Fatal(err)
	}
	genSpec(t, append(p.opts, withOwnedFiles([]string{sock}))...)
	var st os.FileInfo
	if st, err = os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	if uid, gid := fileOwner(st); uid != 1234 || gid != 5678 {
		t.Fatalf("owned file is %d:%d, want 1234:5678", uid, gid)
	}
}

func withBind(src, dst string) oci.SpecOpts {
	return oci.WithMounts([]specs.Mount{bindMount(src, dst, true)})
}

func fileOwner(fi os.FileInfo) (int, int) {
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}
