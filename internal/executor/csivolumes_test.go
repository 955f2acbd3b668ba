package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// fakeCSI records the CSI volume calls.
type fakeCSI struct {
	mu    sync.Mutex
	calls []string
	fail  error
}

func (f *fakeCSI) Publish(_ context.Context, pod, dir, ns, tg string, v *v4.CSIVolumeSource) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("publish %s %s %s/%s %s ro=%v", pod, filepath.Base(dir), ns, tg, v.Volume, v.ReadOnly))
	if f.fail != nil {
		return f.fail
	}
	return os.MkdirAll(dir, 0o755)
}

func (f *fakeCSI) Unpublish(_ context.Context, pod, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "unpublish "+pod+" "+filepath.Base(dir))
	return nil
}

func (f *fakeCSI) got() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, "; ")
}

func csiPod(name string, readOnly bool) *v4.TaskGroup {
	tg := containerTG(name, "app")
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "data", CSI: &v4.CSIVolumeSource{Volume: "db", ReadOnly: readOnly}}}
	tg.Spec.Template.Spec.Containers[0].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/data", PodVolume: "data"}}}
	return tg
}

// A csi volume is published at the pod volume's directory before the tasks start, the
// containers mount that directory (read-only for a read-only claim), and it is
// unpublished once the tasks stopped and again at the removal.
func TestCSIVolumePublished(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("readOnly=%v", readOnly), func(t *testing.T) {
			h, d := newDockerHarness(t)
			cv := &fakeCSI{}
			h.e.cfg.CSIVolumes = cv
			h.run(csiPod("cv", readOnly))
			h.rec.waitPhase(t, "cv", v4.StatusRunning)
			dir := filepath.Join(PodDir(h.dir, testNS, "cv"), "volumes", "data")
			task, _ := d.Task(id("cv", "app"))
			if len(task.Setup.Volumes) != 1 || task.Setup.Volumes[0].HostPath != dir || task.Setup.Volumes[0].ReadOnly != readOnly {
				t.Errorf("mounts %+v, want %s read-only %v", task.Setup.Volumes, dir, readOnly)
			}
			h.e.Kill(testNS, "cv")
			if err := h.e.Remove(context.Background(), testNS, "cv"); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("publish ns-a/cv data ns-a/cv db ro=%v; unpublish ns-a/cv data; unpublish ns-a/cv data", readOnly)
			if got := cv.got(); got != want {
				t.Errorf("calls %q, want %q", got, want)
			}
		})
	}
}

// Without CSI support, or when the publication fails, the pod fails with a message that
// names the volume.
func TestCSIVolumeFailures(t *testing.T) {
	h, _ := newDockerHarness(t)
	h.run(csiPod("none", false))
	if st := h.rec.waitPhase(t, "none", v4.StatusFailed); !strings.Contains(st.Message, "csi volume db: this node has no CSI support") {
		t.Errorf("message %q", st.Message)
	}
	h.e.cfg.CSIVolumes = &fakeCSI{fail: fmt.Errorf("claim volume db: refused")}
	h.run(csiPod("refused", false))
	if st := h.rec.waitPhase(t, "refused", v4.StatusFailed); !strings.Contains(st.Message, "volume data: claim volume db: refused") {
		t.Errorf("message %q", st.Message)
	}
}
