package driver

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		spec v4.PodSpec
		want string
	}{
		{"processes", v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web"}}}, KindProcess},
		{"containers", v4.PodSpec{Containers: []v4.Container{{Image: "busybox"}}}, KindDocker},
		{"empty", v4.PodSpec{}, KindDocker},
	}
	for _, tc := range tests {
		if got := KindOf(&tc.spec); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
