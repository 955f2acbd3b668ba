package instvol

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSweep is one sweep of a node with 1,000 instance directories in use (the
// agent sweeps after each removal of a task group and every minute), and a Mount of one
// that exists (each container start with an instance volume).
func BenchmarkSweep(b *testing.B) {
	d := New(filepath.Join(b.TempDir(), "volumes"))
	keys := make([]Key, 1000)
	for i := range keys {
		keys[i] = key(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("app%d", i/10), i%3)
		if _, err := d.Mount(keys[i], fmt.Sprint(i), 0, "/lain/logs", Owner{}); err != nil {
			b.Fatal(err)
		}
		d.Release(fmt.Sprint(i))
	}
	inUse := func() []Key { return keys }
	b.Run("sweep", func(b *testing.B) {
		for b.Loop() {
			if removed, err := d.Sweep(inUse, time.Now(), time.Hour); err != nil || len(removed) > 0 {
				b.Fatal(removed, err)
			}
		}
	})
	b.Run("mount", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Mount(keys[0], "p", 0, "/lain/logs", Owner{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
