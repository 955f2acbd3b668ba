package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// BenchmarkTaskOutput measures a task's output through its shim into the log: the task
// writes 64 MiB of 80-byte lines to stdout and exits; one op is from its go (a file it
// waits for, after Start) to its exit recorded, by then with the whole output in the log.
func BenchmarkTaskOutput(b *testing.B) {
	const size = 64 << 20
	d := newTestDriverWith(b, Config{})
	b.SetBytes(size)
	line := strings.Repeat("x", 79)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		task := testTask(b, fmt.Sprintf("ns.bench%d.sh", i), &v4.ProcessTask{
			ProcName: "sh", StartGracePeriod: 1,
			StartCmd: fmt.Sprintf(`while [ ! -e go ]; do sleep 0.01; done; yes %s | head -c %d`, line, size),
		})
		if _, err := d.Start(context.Background(), task); err != nil {
			b.Fatal(err)
		}
		ch, err := d.Wait(context.Background(), task.ID)
		if err != nil {
			b.Fatal(err)
		}
		rec, _ := d.load(task.ID)
		b.StartTimer()
		os.WriteFile(filepath.Join(rec.WorkDir, "go"), nil, 0o644)
		<-ch
		b.StopTimer()
		if fi, err := os.Stat(rec.LogPath); err != nil || fi.Size() < size {
			b.Fatalf("log: %v %v", fi, err)
		}
		d.Remove(context.Background(), task.ID)
	}
}
