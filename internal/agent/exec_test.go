package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
)

// containerTG is a task group of two containers, bound to testNode.
func containerTG(name string) *v4.TaskGroup {
	tg := processTG(name)
	tg.Spec.Owner.Kind = v4.KindApplication
	tg.Spec.Template.Spec = v4.PodSpec{NetworkMode: "BRIDGE", NetworkType: "cnm",
		Containers: []v4.Container{{Name: "web", Image: "busybox"}, {Name: "side", Image: "busybox"}}}
	return tg
}

// berth exec through the server's proxy and the agent's endpoint: input, output, exit
// code, the task flag, a terminal, and the errors before and after the upgrade.
func TestExecThroughServerAndAgent(t *testing.T) {
	c := newCluster(t)
	docker := fake.NewDocker("10.88.0.2")
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) {
		cfg.Drivers["docker"] = docker
	})
	createTG(t, containerTG("0.web.ns-a.c.1"))
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	var gotTask string
	var gotSize v4.TermSize
	docker.SetInteractive(func(_ context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
		gotTask = id
		if tty {
			gotSize = <-resize
		}
		b, _ := io.ReadAll(stdin)
		io.WriteString(stdout, strings.Join(cmd, "|")+":"+string(b))
		return 3, nil
	})
	cl := c.client()
	var out bytes.Buffer
	resize := make(chan v4.TermSize, 1)
	resize <- v4.TermSize{Rows: 30, Cols: 100}
	code, err := cl.Exec(context.Background(), testNS, "0.web.ns-a.c.1", client.ExecOptions{
		Task: "side", Cmd: []string{"sh", "-c", "cat"}, TTY: true, Stdin: strings.NewReader("typed"), Stdout: &out, Resize: resize})
	if err != nil || code != 3 || out.String() != "sh|-c|cat:typed" {
		t.Fatalf("exec = %d %v %q", code, err, out.String())
	}
	if gotTask != testNS+".0.web.ns-a.c.1.side" || gotSize != (v4.TermSize{Rows: 30, Cols: 100}) {
		t.Errorf("task %q size %+v", gotTask, gotSize)
	}

	// Errors: an unknown task group (404 before the upgrade), an unknown task (after it).
	if _, err := cl.Exec(context.Background(), testNS, "nope", client.ExecOptions{Cmd: []string{"true"}, Stdout: io.Discard}); client.StatusOf(err) != 404 {
		t.Errorf("unknown task group: %v", err)
	}
	if _, err := cl.Exec(context.Background(), testNS, "0.web.ns-a.c.1", client.ExecOptions{Task: "nope", Cmd: []string{"true"}, Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), `no task "nope"`) {
		t.Errorf("unknown task: %v", err)
	}
}

// A CNI sandbox left by a task group deleted while the agent was away is torn down.
func TestReconcileTearsDownOrphanPodNetworks(t *testing.T) {
	c := newCluster(t)
	docker := fake.NewDocker("10.88.0.2")
	if _, _, err := docker.SetupPod(context.Background(), testNS+".0.gone.ns-a.c.1", nil, nil); err != nil {
		t.Fatal(err)
	}
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) {
		cfg.Drivers["docker"] = docker
	})
	waitFor(t, "the orphan sandbox to be torn down", func() bool { return !docker.Sandbox(testNS + ".0.gone.ns-a.c.1") })
}

// While the Docker driver cannot list its tasks, a container task group no agent ever
// reported fails with the driver's reason, one that may run is left alone, and process
// task groups run as usual; once the daemon answers, the left one is adopted or started.
func TestReconcileWithAnUnreachableDaemon(t *testing.T) {
	c := newCluster(t)
	docker := fake.NewDocker("10.88.0.2")
	down := errors.New("docker daemon unreachable at unix:///x.sock")
	docker.SetDown(down)
	maybe := containerTG("0.maybe.ns-a.c.1")
	maybe.Status.Phase = v4.StatusRunning // reported by an agent before: it may run
	createTG(t, maybe)
	fresh := containerTG("0.fresh.ns-a.c.1")
	fresh.Status.Phase = v4.StatusStaging // as the controller creates it
	createTG(t, fresh)
	createTG(t, processTG("0.proc.ns-a.c.1"))
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) {
		cfg.Drivers["docker"] = docker
	})
	tg := waitPhase(t, "0.fresh.ns-a.c.1", v4.StatusFailed)
	if !strings.Contains(tg.Status.Message, down.Error()) {
		t.Errorf("message = %q", tg.Status.Message)
	}
	waitPhase(t, "0.proc.ns-a.c.1", v4.StatusRunning)
	if got, _ := tgs().Get(context.Background(), testNS, "0.maybe.ns-a.c.1"); got.Status.Phase != v4.StatusRunning || len(docker.Started()) != 0 {
		t.Fatalf("the task group that may run: %s, started %v", got.Status.Phase, docker.Started())
	}
	// Back: nothing of it runs, so the next reconcile starts it (after the sync loop's
	// backoff).
	docker.SetDown(nil)
	waitFor(t, "the task group to start once the daemon answers", func() bool {
		return docker.Running(executor.TaskID(testNS, "0.maybe.ns-a.c.1", "side"))
	})
}
