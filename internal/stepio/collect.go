package stepio

import (
	"context"
	"fmt"
	"io"
	"os"

	v4 "github.com/berthhq/berth/api/v4"
)

// LogsArtifact is the artifact name of a step's stored log (StepIO.LogsKey).
const LogsArtifact = "main-logs"

// Logs opens the main task's log: its standard output alone (stdout) or both streams.
type Logs func(ctx context.Context, stdout bool) (io.ReadCloser, error)

// Collector collects a step's outputs once its main task exited.
type Collector struct {
	Store Store
	// TmpDir is a directory of the agent's own where artifacts are written before they
	// are sent (so a retry can send them again, and none is ever whole in memory).
	TmpDir string
	// MaxArtifactBytes bounds one stored artifact (default v4.MaxStepArtifactBytes).
	MaxArtifactBytes int64
}

// Collect reads the outputs step asks for from src and logs, stores the artifacts and
// the log, and returns the result, always Collected: its Error names the first output
// that failed (the log is stored all the same, for the failure's reader).
func (c *Collector) Collect(ctx context.Context, step *v4.StepIO, src Source, logs Logs, exitCode int) v4.StepResult {
	res := v4.StepResult{Collected: true, ExitCode: exitCode}
	if err := c.collect(ctx, step, src, logs, &res); err != nil {
		res.Error = err.Error()
	}
	if step.LogsKey != "" {
		stored, err := c.storeLog(ctx, logs)
		switch {
		case err != nil && res.Error == "":
			res.Error = fmt.Sprintf("store the main task's log: %v", err)
		case err == nil:
			res.Logs = &stored
		}
	}
	return res
}

func (c *Collector) collect(ctx context.Context, step *v4.StepIO, src Source, logs Logs, res *v4.StepResult) error {
	total := 0
	for _, p := range step.Parameters {
		v, ok, err := ReadParameter(ctx, src, p.Path, v4.MaxStepParameterBytes)
		switch {
		case err != nil:
			return fmt.Errorf("output parameter %s: %w", p.Name, err)
		case !ok && p.Default == nil:
			return fmt.Errorf("output parameter %s: %s does not exist and there is no default", p.Name, p.Path)
		case !ok:
			v = *p.Default
		}
		if total += len(v); total > v4.MaxStepOutputBytes {
			return fmt.Errorf("output parameters: more than %d bytes together", v4.MaxStepOutputBytes)
		}
		res.Parameters = append(res.Parameters, v4.WfParameter{Name: p.Name, Value: &v})
	}
	if step.Result || step.StdoutParameter != "" {
		tail, whole, err := readStdout(ctx, logs, v4.MaxStepParameterBytes)
		if err != nil {
			return fmt.Errorf("standard output: %w", err)
		}
		if step.StdoutParameter != "" {
			if !whole {
				return fmt.Errorf("output parameter %s: standard output is more than %d bytes", step.StdoutParameter, v4.MaxStepParameterBytes)
			}
			total += len(tail)
			res.Parameters = append(res.Parameters, v4.WfParameter{Name: step.StdoutParameter, Value: &tail})
		}
		if step.Result {
			total += len(tail)
			res.Result = &tail
		}
		if total > v4.MaxStepOutputBytes {
			return fmt.Errorf("output parameters and result: more than %d bytes together", v4.MaxStepOutputBytes)
		}
	}
	for _, a := range step.Artifacts {
		stored, ok, err := c.storeArtifact(ctx, src, a)
		if err != nil {
			return fmt.Errorf("output artifact %s: %w", a.Name, err)
		}
		if !ok && !a.Optional {
			return fmt.Errorf("output artifact %s: %s does not exist", a.Name, a.Path)
		}
		if ok {
			res.Artifacts = append(res.Artifacts, stored)
		}
	}
	return nil
}

// readStdout reads standard output whole, keeping its last max bytes; whole says
// nothing was dropped.
func readStdout(ctx context.Context, logs Logs, max int) (string, bool, error) {
	rc, err := logs(ctx, true)
	if err != nil {
		return "", false, err
	}
	defer rc.Close()
	t := &tailBuffer{max: max}
	if _, err := io.Copy(t, rc); err != nil {
		return "", false, err
	}
	return string(t.buf), !t.dropped, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf     []byte
	max     int
	dropped bool
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	n := len(b)
	if len(b) >= t.max {
		t.dropped = t.dropped || len(t.buf) > 0 || len(b) > t.max
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(b) - t.max; over > 0 {
		t.dropped = true
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

func (c *Collector) limit() int64 {
	if c.MaxArtifactBytes > 0 {
		return c.MaxArtifactBytes
	}
	return v4.MaxStepArtifactBytes
}

// storeArtifact archives a's path to a file of TmpDir and sends it; ok is false when
// the path does not exist.
func (c *Collector) storeArtifact(ctx context.Context, src Source, a v4.StepOutputArtifact) (v4.StoredArtifact, bool, error) {
	f, err := c.tmpFile()
	if err != nil {
		return v4.StoredArtifact{}, false, err
	}
	defer cleanup(f)
	size, _, err := Archive(ctx, src, a.Path, f, c.limit())
	if isNotExist(err) {
		return v4.StoredArtifact{}, false, nil
	}
	if err != nil {
		return v4.StoredArtifact{}, false, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return v4.StoredArtifact{}, false, err
	}
	stored, err := c.Store.Put(ctx, a.Name, f, size)
	if err != nil {
		return v4.StoredArtifact{}, false, fmt.Errorf("store: %w", err)
	}
	return stored, true, nil
}

// storeLog sends the main task's log (both streams), its first MaxArtifactBytes.
func (c *Collector) storeLog(ctx context.Context, logs Logs) (v4.StoredArtifact, error) {
	rc, err := logs(ctx, false)
	if err != nil {
		return v4.StoredArtifact{}, err
	}
	defer rc.Close()
	f, err := c.tmpFile()
	if err != nil {
		return v4.StoredArtifact{}, err
	}
	defer cleanup(f)
	size, err := io.Copy(f, io.LimitReader(rc, c.limit()))
	if err != nil {
		return v4.StoredArtifact{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return v4.StoredArtifact{}, err
	}
	return c.Store.Put(ctx, LogsArtifact, f, size)
}

func (c *Collector) tmpFile() (*os.File, error) {
	if err := os.MkdirAll(c.TmpDir, 0o700); err != nil {
		return nil, err
	}
	return os.CreateTemp(c.TmpDir, "artifact-")
}

// cleanup closes and removes a temporary file (best effort: TmpDir goes with the pod).
func cleanup(f *os.File) {
	f.Close()
	os.Remove(f.Name()) //nolint:errcheck // best effort, as above
}
