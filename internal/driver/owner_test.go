package driver

import (
	"strings"
	"testing"
)

func TestOwnerOwns(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	me := Owner{Cluster: a, Node: "n1"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"mine", map[string]string{LabelCluster: a, LabelNode: "n1"}, true},
		{"mine without a node label", map[string]string{LabelCluster: a}, true},
		{"my cluster, another node", map[string]string{LabelCluster: a, LabelNode: "n2"}, false},
		{"another cluster, same node name", map[string]string{LabelCluster: b, LabelNode: "n1"}, false},
		{"another cluster, no node label", map[string]string{LabelCluster: b}, false},
		{"legacy of my node", map[string]string{LabelNode: "n1"}, true},
		{"legacy of another node", map[string]string{LabelNode: "n2"}, false},
		{"legacy without a node label", map[string]string{LabelTaskGroup: "ns/x"}, false},
	} {
		if got := me.Owns(c.labels); got != c.want {
			t.Errorf("%s: Owns(%v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A driver on its own (no cluster, no node) keeps its older behaviour for unlabelled
	// tasks and never takes a cluster's.
	var none Owner
	if !none.Owns(map[string]string{LabelNode: "n9"}) || none.Owns(map[string]string{LabelCluster: a}) {
		t.Error("the zero owner: wants every unlabelled task and no cluster's")
	}
}

func TestOwnerStampAndTag(t *testing.T) {
	a := "sha256:0123456789abcdef" + strings.Repeat("0", 48)
	l := map[string]string{LabelCluster: "forged"}
	Owner{Cluster: a}.Stamp(l)
	if l[LabelCluster] != a {
		t.Errorf("stamp: %v", l)
	}
	Owner{}.Stamp(l)
	if _, ok := l[LabelCluster]; ok {
		t.Errorf("the zero owner's stamp left a cluster label: %v", l)
	}
	if got := (Owner{Cluster: a}).Tag(); got != "0123456789ab" {
		t.Errorf("tag of a CA hash: %q", got)
	}
	if got := (Owner{Cluster: "Cluster A"}).Tag(); len(got) != tagLen || !isLowerHex(got) {
		t.Errorf("tag of another ID: %q", got)
	}
	if (Owner{Cluster: "x"}).Tag() == (Owner{Cluster: "y"}).Tag() || (Owner{}).Tag() != "" {
		t.Error("tags do not tell clusters apart")
	}
}
