package executor

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/stepio"
)

// filesDriver is a fake container driver whose tasks' files are a host directory, read
// as the docker driver reads a container's (driver.FileReader); it records, for each
// read, whether the sidecar still ran.
type filesDriver struct {
	*fake.Driver
	root    string
	sidecar string

	mu        sync.Mutex
	reads     []string
	sidecarUp []bool
}

func (d *filesDriver) ReadFiles(ctx context.Context, id, p string) (io.ReadCloser, error) {
	d.mu.Lock()
	d.reads = append(d.reads, p)
	d.sidecarUp = append(d.sidecarUp, d.Running(d.sidecar))
	d.mu.Unlock()
	root, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		defer root.Close()
		tw := tar.NewWriter(pw)
		err := stepio.RootSource{Root: root}.Walk(ctx, p, func(h *tar.Header, r io.Reader) error {
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if r != nil {
				_, err := io.Copy(tw, r)
				return err
			}
			return nil
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

func (d *filesDriver) readCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.reads)
}

// containerStep is a container step with a main task and a sidecar, one raw input and
// one output parameter.
func containerStep(name string) *v4.TaskGroup {
	tg := containerTG(name, "main", "side")
	tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindWorkflow, Name: "wf"}
	tg.Spec.Template.Spec.Containers[1].Lifecycle = &v4.Lifecycle{Sidecar: true}
	raw := "staged"
	tg.Spec.Step = &v4.StepIO{Main: "main", Inputs: []v4.StepInput{{Name: "r", Path: "/in/r.txt", Raw: &raw}},
		Parameters: []v4.StepParameter{{Name: "p", Path: "/out/p"}}}
	return tg
}

func newFilesHarness(t *testing.T, name string) (*harness, *filesDriver) {
	fd := &filesDriver{Driver: fake.New("docker"), root: t.TempDir(), sidecar: id(name, "side")}
	os.MkdirAll(filepath.Join(fd.root, "out"), 0o755)
	os.WriteFile(filepath.Join(fd.root, "out", "p"), []byte("value"), 0o644)
	h := newHarness(t, func(c *Config) { c.Drivers["docker"] = fd })
	return h, fd
}

// TestContainerStep: the input is staged on the node and bound at its path in the main
// container; once the main task exits the outputs are read while the sidecar still
// runs, then the sidecar is stopped and the result reported.
func TestContainerStep(t *testing.T) {
	h, fd := newFilesHarness(t, "cs")
	h.run(containerStep("cs"))
	h.rec.waitPhase(t, "cs", v4.StatusRunning)
	spec, _ := fd.Task(id("cs", "main"))
	i := slices.IndexFunc(spec.Setup.Volumes, func(m driver.Mount) bool { return m.ContainerPath == "/in/r.txt" })
	if i < 0 {
		t.Fatalf("no bind of the input: %+v", spec.Setup.Volumes)
	}
	if b, err := os.ReadFile(spec.Setup.Volumes[i].HostPath); err != nil || string(b) != "staged" {
		t.Errorf("staged input: %q, %v", b, err)
	}
	if !strings.HasPrefix(spec.Setup.Volumes[i].HostPath, filepath.Join(PodDir(h.dir, testNS, "cs"), "step")) {
		t.Errorf("staged outside the pod's step dir: %s", spec.Setup.Volumes[i].HostPath)
	}
	fd.Exit(id("cs", "main"), 0)
	st := h.rec.waitPhase(t, "cs", v4.StatusFinish)
	if st.Step == nil || st.Step.Error != "" || len(st.Step.Parameters) != 1 || *st.Step.Parameters[0].Value != "value" {
		t.Fatalf("step %+v", st.Step)
	}
	if fd.readCount() != 1 || !fd.sidecarUp[0] {
		t.Errorf("reads %v, sidecar up while reading %v", fd.reads, fd.sidecarUp)
	}
	if fd.Running(id("cs", "side")) {
		t.Error("the sidecar still runs")
	}
}

// TestStepCollectedAfterRestart: an agent that restarts after the main task exited
// collects on adoption; one that finds the result already reported does not again.
func TestStepCollectedAfterRestart(t *testing.T) {
	h, fd := newFilesHarness(t, "ra")
	tg := containerStep("ra")
	states := leftover(t, fd.Driver, tg, "main", "side")
	fd.Exit(id("ra", "main"), 4)
	states, _ = fd.List(context.Background())
	if !h.e.Adopt(context.Background(), tg, states) {
		t.Fatal("Adopt = false")
	}
	st := h.rec.waitPhase(t, "ra", v4.StatusFailed)
	if st.Step == nil || !st.Step.Collected || st.Step.ExitCode != 4 || len(st.Step.Parameters) != 1 {
		t.Fatalf("step %+v", st.Step)
	}

	h2, fd2 := newFilesHarness(t, "rb")
	tg2 := containerStep("rb")
	tg2.Status.Step = &v4.StepResult{Collected: true, ExitCode: 4, Error: "reported before"}
	leftover(t, fd2.Driver, tg2, "main", "side")
	fd2.Exit(id("rb", "main"), 4)
	states, _ = fd2.List(context.Background())
	h2.e.Adopt(context.Background(), tg2, states)
	st = h2.rec.waitPhase(t, "rb", v4.StatusFailed)
	if fd2.readCount() != 0 || st.Step == nil || st.Step.Error != "reported before" {
		t.Errorf("collected again: reads %d, step %+v", fd2.readCount(), st.Step)
	}
}
