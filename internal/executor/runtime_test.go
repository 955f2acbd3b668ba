package executor

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Every container of a pod gets the pod's runtime, for the driver to resolve; a pod
// without one leaves it to the node's default.
func TestPodRuntimeReachesTheDriver(t *testing.T) {
	h, d := newDockerHarness(t)
	tg := containerTG("rt", "web", "side")
	tg.Spec.Template.Spec.NetworkMode = "HOST"
	tg.Spec.Template.Spec.Runtime = "crun"
	h.run(tg)
	h.rec.waitPhase(t, "rt", v4.StatusRunning)
	plain := containerTG("plain", "web")
	plain.Spec.Template.Spec.NetworkMode = "HOST"
	h.run(plain)
	h.rec.waitPhase(t, "plain", v4.StatusRunning)
	for _, c := range []struct{ pod, task, want string }{{"rt", "web", "crun"}, {"rt", "side", "crun"}, {"plain", "web", ""}} {
		task, ok := d.Task(id(c.pod, c.task))
		if !ok || task.Setup == nil || task.Setup.Runtime != c.want {
			t.Errorf("%s/%s: runtime %+v, want %q", c.pod, c.task, task.Setup, c.want)
		}
	}
}
