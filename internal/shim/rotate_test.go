package shim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/logfile"
)

// A task that writes well past its log's limit leaves MaxFiles files of at most MaxBytes
// each, every line of each a whole record, and the newest lines in the live file.
func TestOutputRotatesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "task.log")
	live, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	lim := logfile.Limits{MaxBytes: logfile.MinMaxBytes, MaxFiles: 3}
	spec := Spec{LogFormat: crilog.Format, LogPath: path, LogMaxBytes: lim.MaxBytes, LogMaxFiles: lim.MaxFiles}
	rot := logfile.NewRotator(live, path, spec.logLimits(), nil, nil)
	defer rot.Close()
	o, err := newOutput(rot, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1 MiB in lines of 1000 bytes, and lines longer than a record (split into partial
	// records) on stderr: about 17 times the limit.
	const lines = 1 << 10
	for i := range lines {
		fmt.Fprintf(o.taskOut, "%04d %s\n", i, bytes.Repeat([]byte("x"), 994))
		if i%200 == 0 { // at most ~100 KiB of stderr, so stdout's newest records stay kept
			o.taskErr.Write(append(bytes.Repeat([]byte("y"), crilog.MaxRecord+100), '\n'))
		}
	}
	o.started()
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the copy did not end with the pipes")
	}
	names := []string{logfile.Rotated(path, 2), logfile.Rotated(path, 1), path}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 || int64(len(b)) > lim.MaxBytes {
			t.Errorf("%s: %d bytes, want 1 to %d", name, len(b), lim.MaxBytes)
		}
		if b[len(b)-1] != '\n' {
			t.Errorf("%s ends inside a record", name)
		}
		for line := range bytes.Lines(b) {
			if crilog.Parse(bytes.TrimSuffix(line, []byte("\n"))).Time == "" {
				t.Fatalf("%s: %.60q... is not a whole record", name, line)
			}
		}
	}
	if _, err := os.Stat(logfile.Rotated(path, 3)); !os.IsNotExist(err) {
		t.Errorf("a fourth file is kept: %v", err)
	}
	// The newest stdout record kept is the last line written: rotation drops the oldest.
	// (Only within a stream: stdout and stderr are copied concurrently, so stderr's records
	// may come after stdout's last one.)
	// A line may come as partial records (a pipe read that ended inside it) and a final
	// one: the line is their texts together.
	var last, line []byte
	for _, name := range names {
		b, _ := os.ReadFile(name)
		for rec := range bytes.Lines(b) {
			r := crilog.Parse(bytes.TrimSuffix(rec, []byte("\n")))
			if r.Stream != crilog.Stdout {
				continue
			}
			line = append(line, r.Text...)
			if !r.Partial {
				last, line = line, nil
			}
		}
	}
	if want := fmt.Sprintf("%04d ", lines-1); !bytes.HasPrefix(last, []byte(want)) {
		t.Errorf("the newest stdout record kept is %.20q..., want the last line %q", last, want)
	}
}
