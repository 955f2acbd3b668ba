package cni

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadAndBytes(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, "/usr/lib/cni", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no network config") {
		t.Fatalf("empty dir: %v", err)
	}
	// A single-plugin .conf is upgraded to a list; .conflist wins by name order.
	os.WriteFile(filepath.Join(dir, "20-one.conf"), []byte(`{"cniVersion":"1.0.0","name":"one","type":"bridge"}`), 0o644)
	n, err := Load(dir, "/usr/lib/cni", t.TempDir())
	if err != nil || n.Name() != "one" || len(n.list.Plugins) != 1 {
		t.Fatalf("conf: %v %v", n, err)
	}
	os.WriteFile(filepath.Join(dir, "10-list.conflist"), []byte(`{"cniVersion":"1.0.0","name":"list","plugins":[
		{"type":"bridge","ipam":{"type":"host-local","subnet":"10.88.9.0/24"}},{"type":"portmap","capabilities":{"portMappings":true}}]}`), 0o644)
	n, err = Load(dir, "/usr/lib/cni", t.TempDir())
	if err != nil || n.Name() != "list" {
		t.Fatalf("conflist: %v %v", n, err)
	}
	b, err := n.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	n2, err := FromBytes(b, "/usr/lib/cni", t.TempDir())
	if err != nil || n2.Name() != "list" || len(n2.list.Plugins) != 2 || n2.list.Plugins[1].Network.Type != "portmap" {
		t.Fatalf("round trip: %s %v", b, err)
	}
	if _, err := FromBytes([]byte("{"), "", ""); err == nil {
		t.Fatal("bad saved config accepted")
	}
}
