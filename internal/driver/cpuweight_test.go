package driver

import "testing"

func TestCPUShares(t *testing.T) {
	for _, c := range []struct {
		name      string
		request   float64
		revocable bool
		want      uint64
	}{
		{"no request", 0, false, DefaultCPUShares},
		{"half a core", 0.5, false, 512},
		{"two cores", 2, false, 2048},
		{"a sliver", 0.001, false, MinCPUShares},
		{"more than the kernel takes", 1000, false, MaxCPUShares},
		{"revocable without a request", 0, true, MinCPUShares},
		{"revocable with a request", 4, true, MinCPUShares},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := &Task{CPURequest: c.request, Revocable: c.revocable}
			if got := tk.CPUShares(); got != c.want {
				t.Errorf("CPUShares() = %d, want %d", got, c.want)
			}
		})
	}
}

// The conversion is runc's (libcontainer/cgroups.ConvertCPUSharesToCgroupV2Value), so a
// process task weighs on a v2 host what a container of the same request does.
func TestCPUWeight(t *testing.T) {
	for _, c := range []struct{ shares, want uint64 }{
		{0, 1}, {2, 1}, {512, 20}, {1024, 39}, {2048, 79}, {262144, 10000}, {1 << 20, 10000},
	} {
		if got := CPUWeight(c.shares); got != c.want {
			t.Errorf("CPUWeight(%d) = %d, want %d", c.shares, got, c.want)
		}
	}
}
