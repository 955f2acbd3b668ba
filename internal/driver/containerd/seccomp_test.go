package containerd

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// A container gets containerd's default seccomp profile, as dockerd gives its own,
// except a privileged one and one with seccomp=unconfined.
func TestSeccompProfile(t *testing.T) {
	for _, tc := range []struct {
		name       string
		privileged bool
		params     []v4.Parameter
		want       bool
	}{
		{"default", false, nil, true},
		{"seccomp=default", false, []v4.Parameter{{Key: "security-opt", Value: "seccomp=default"}}, true},
		{"seccomp=unconfined", false, []v4.Parameter{{Key: "security-opt", Value: "seccomp=unconfined"}}, false},
		{"privileged", true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseParameters(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			task := &driver.Task{Container: &v4.Container{Privileged: tc.privileged}, Setup: &driver.ContainerSetup{}}
			s, _ := genSpec(t, append(slices.Clone(p.opts), (&Driver{}).lastOpts(task, p)...)...)
			if got := s.Linux.Seccomp != nil; got != tc.want {
				t.Fatalf("seccomp profile set = %v, want %v", got, tc.want)
			}
			if tc.want && (s.Linux.Seccomp.DefaultAction == "" || len(s.Linux.Seccomp.Syscalls) == 0) {
				t.Errorf("profile %+v: want a default action and allowed syscalls", s.Linux.Seccomp.DefaultAction)
			}
		})
	}
}
