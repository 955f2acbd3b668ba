package cni

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStates(t *testing.T) {
	dir := t.TempDir()
	mine := States{Dir: dir, Cluster: "a"}
	other := States{Dir: dir, Cluster: "b"}
	if p, err := mine.Load("ns.none"); p != nil || err != nil {
		t.Fatalf("missing state: %v %v", p, err)
	}
	p := &PodState{ID: "ns.web", Cluster: "a", SandboxID: "s1", Network: "n", Config: []byte(`{"name":"n"}`),
		Ports: []PortMapping{{HostPort: 31000, ContainerPort: 80, Protocol: "tcp"}}}
	if err := mine.Save(p); err != nil {
		t.Fatal(err)
	}
	// A state of an older agent, without a cluster, is anyone's.
	if err := mine.Save(&PodState{ID: "ns.old", SandboxID: "s2"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".tmp.json"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(dir, "ns.bad.json"), []byte("{"), 0o600)
	got, err := mine.Load("ns.web")
	if err != nil || got.SandboxID != "s1" || len(got.Ports) != 1 || !json.Valid(got.Config) {
		t.Fatalf("load: %+v %v", got, err)
	}
	if _, err := other.Load("ns.web"); !errors.Is(err, ErrForeignState) {
		t.Fatalf("another cluster loads the state: %v", err)
	}
	if _, err := mine.Load("ns.bad"); err == nil {
		t.Fatal("a corrupt state loads")
	}
	for _, c := range []struct {
		s    States
		want []string
	}{{mine, []string{"ns.bad", "ns.old", "ns.web"}}, {other, []string{"ns.bad", "ns.old"}}} {
		ids, err := c.s.IDs()
		slices.Sort(ids)
		if err != nil || !slices.Equal(ids, c.want) {
			t.Errorf("IDs of %s: %v %v, want %v", c.s.Cluster, ids, err, c.want)
		}
	}
	if err := mine.Remove("ns.web"); err != nil {
		t.Fatal(err)
	}
	if err := mine.Remove("ns.web"); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if p, _ := mine.Load("ns.web"); p != nil {
		t.Fatal("state left")
	}
}
