package gpu

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The vcuda socket is 0660, never 0777, from the moment it can be connected to; a stale
// socket a previous agent left is replaced with the same owner (a running container's
// user keeps its access), and the replacement answers on the same path.
func TestVCUDASocketMode(t *testing.T) {
	otherUID, otherGID := 4242, 4343
	cases := []struct {
		name      string
		stale     bool // a previous agent's socket is there, given to the container's user
		wantOwner [2]int
	}{
		{"new socket", false, [2]int{os.Getuid(), os.Getgid()}},
		{"stale socket of a container's user", true, [2]int{otherUID, otherGID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			socket := filepath.Join(t.TempDir(), "vcuda.sock")
			if tc.stale {
				if os.Getuid() != 0 {
					t.Skip("giving a socket to another user needs root")
				}
				old, err := ServeVCUDA(socket, func(context.Context, *VDeviceRequest) error { return nil })
				if err != nil {
					t.Fatal(err)
				}
				old.Close()
				if err := os.Lchown(socket, otherUID, otherGID); err != nil { // as the Docker driver does
					t.Fatal(err)
				}
			}
			srv, err := ServeVCUDA(socket, func(context.Context, *VDeviceRequest) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			fi, err := os.Lstat(socket)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
				t.Errorf("socket mode %v, want a socket 0660", fi.Mode())
			}
			if got := [2]int{int(st.Uid), int(st.Gid)}; got != tc.wantOwner {
				t.Errorf("owner %v, want %v", got, tc.wantOwner)
			}
			conn, err := net.Dial("unix", socket)
			if err != nil {
				t.Fatalf("the renamed socket does not answer: %v", err)
			}
			conn.Close()
			entries, _ := os.ReadDir(filepath.Dir(socket))
			if len(entries) != 1 {
				t.Errorf("the socket's directory holds %d entries, want the socket alone", len(entries))
			}
		})
	}
}
