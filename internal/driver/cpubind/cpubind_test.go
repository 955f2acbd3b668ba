package cpubind

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/driver"
)

func TestList(t *testing.T) {
	cpus, err := ParseList("0-3,6,7\n")
	if err != nil || !slices.Equal(cpus, []int{0, 1, 2, 3, 6, 7}) {
		t.Fatalf("parse: %v %v", cpus, err)
	}
	if s := FormatList(cpus); s != "0-3,6-7" {
		t.Fatalf("format: %q", s)
	}
	for _, bad := range []string{"a", "3-1", "1,,2", "-1", "0-99999999"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestChoose(t *testing.T) {
	one := []Node{{0, []int{0, 1, 2, 3}}}
	two := []Node{{0, []int{0, 1, 2, 3}}, {1, []int{4, 5, 6, 7}}}
	first := func(int) int { return 0 }
	last := func(n int) int { return n - 1 }
	for _, c := range []struct {
		name    string
		nodes   []Node
		bound   map[int]bool
		n, pref int
		rnd     func(int) int
		want    Binding
		wantErr string
	}{
		{"too many", one, nil, 5, -1, first, Binding{}, "cpuset: 5 cpus requested, the machine has 4"},
		{"one node binds no memory node", one, map[int]bool{0: true}, 2, -1, first, Binding{CPUs: "1-2"}, ""},
		{"not enough free", one, map[int]bool{0: true, 1: true}, 3, -1, first, Binding{}, "only 2 are not bound"},
		{"random node", two, nil, 2, -1, last, Binding{"4-5", "1"}, ""},
		// Node 1 is half bound: 3 CPUs fit only on node 0, whatever the draw.
		{"fitting node", two, map[int]bool{4: true, 5: true}, 3, -1, last, Binding{"0-2", "0"}, ""},
		// 3 free on each node: 5 fit on the machine but never across nodes.
		{"across nodes", two, map[int]bool{0: true, 4: true}, 5, -1, first, Binding{}, "never spans nodes"},
		// The task's GPUs are on node 0: it wins over the draw; when it has no room, the draw.
		{"the GPUs' node", two, nil, 2, 0, last, Binding{"0-1", "0"}, ""},
		{"the GPUs' node full", two, map[int]bool{0: true, 1: true, 2: true}, 2, 0, last, Binding{"4-5", "1"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Choose(c.nodes, c.bound, c.n, c.pref, c.rnd)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || b != c.want {
				t.Fatalf("got %+v %v, want %+v", b, err, c.want)
			}
		})
	}
}

// writeSysfs makes a sysfs tree of one machine: online CPUs and NUMA nodes' lists.
func writeSysfs(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadTopology(t *testing.T) {
	root := writeSysfs(t, map[string]string{"devices/system/cpu/online": "0-3\n"})
	nodes, err := ReadTopology(root)
	if err != nil || len(nodes) != 1 || len(nodes[0].CPUs) != 4 {
		t.Fatalf("no node entries: %+v %v", nodes, err)
	}
	root = writeSysfs(t, map[string]string{
		"devices/system/cpu/online":         "0-3\n",
		"devices/system/node/node1/cpulist": "2-3\n",
		"devices/system/node/node0/cpulist": "0-1\n",
		"devices/system/node/node2/cpulist": "\n", // memory only
	})
	nodes, err = ReadTopology(root)
	if err != nil || len(nodes) != 2 || nodes[1].ID != 1 || !slices.Equal(nodes[1].CPUs, []int{2, 3}) {
		t.Fatalf("nodes: %+v %v", nodes, err)
	}
}

func TestResolve(t *testing.T) {
	two := writeSysfs(t, map[string]string{
		"devices/system/node/node0/cpulist": "0-1\n",
		"devices/system/node/node1/cpulist": "2-3\n",
	})
	none := func() (map[int]bool, error) { return nil, nil }
	for _, c := range []struct {
		name    string
		r       Request
		want    Binding
		wantErr string
	}{
		{"nothing asked", Request{PreferNUMA: -1}, Binding{}, ""},
		{"mems alone", Request{Mems: "1", PreferNUMA: -1}, Binding{Mems: "1"}, ""},
		{"explicit cpus", Request{CPUs: "3,0", Mems: "0", PreferNUMA: -1}, Binding{"0,3", "0"}, ""},
		{"explicit too large", Request{CPUs: "0-7", PreferNUMA: -1}, Binding{}, "cpuset: 8 cpus requested, the machine has 4"},
		{"explicit bad", Request{CPUs: "x", PreferNUMA: -1}, Binding{}, `cpuset-cpus "x"`},
		{"bind on the GPUs' node", Request{Bind: true, CPURequest: 1.5, PreferNUMA: 1}, Binding{"2-3", "1"}, ""},
		{"bind with explicit mems", Request{Bind: true, CPURequest: 0.1, Mems: "0", PreferNUMA: 1}, Binding{"2", "0"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Resolve(two, c.r, none)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || b != c.want {
				t.Fatalf("got %+v %v, want %+v", b, err, c.want)
			}
		})
	}
}

func TestPreferredNUMA(t *testing.T) {
	for _, c := range []struct {
		gpus []driver.GPU
		want int
	}{
		{nil, -1},
		{[]driver.GPU{{NUMANode: 1}, {NUMANode: 1}}, 1},
		{[]driver.GPU{{NUMANode: 0}, {NUMANode: 1}}, -1},
	} {
		if got := PreferredNUMA(c.gpus); got != c.want {
			t.Errorf("PreferredNUMA(%+v) = %d, want %d", c.gpus, got, c.want)
		}
	}
}
