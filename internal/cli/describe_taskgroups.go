package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// ownedTaskGroups lists the task groups of an application or process, by index.
func ownedTaskGroups(ctx context.Context, c *client.Client, kind v4.Kind, m *v4.ObjectMeta) ([]*v4.TaskGroup, error) {
	list, err := c.List(ctx, v4.KindTaskGroup, m.Namespace)
	if err != nil {
		return nil, err
	}
	var out []*v4.TaskGroup
	for _, o := range list.Items {
		if tg, ok := o.(*v4.TaskGroup); ok && tg.Spec.Owner.Kind == kind && tg.Spec.Owner.Name == m.Name {
			out = append(out, tg)
		}
	}
	slices.SortFunc(out, func(a, b *v4.TaskGroup) int { return a.Spec.Index - b.Spec.Index })
	return out, nil
}

// taskGroups writes one line per task group, then each task's state and the reason of a
// failure (exit code, OOM, health, the driver's message).
func (d *describer) taskGroups(tgs []*v4.TaskGroup) {
	if len(tgs) == 0 {
		d.kv("Task Groups", "%s", none)
		return
	}
	d.section("Task Groups", func() {
		for _, tg := range tgs {
			line := fmt.Sprintf("%d  %s  %s on %s", tg.Spec.Index, tg.Metadata.Name, orNone(tg.Status.Phase), orNone(tg.Spec.Node))
			if tg.Spec.ReschedTimes > 0 {
				line += fmt.Sprintf(", restarted %d times", tg.Spec.ReschedTimes)
			}
			if tg.Status.Message != "" {
				line += ": " + tg.Status.Message
			}
			d.line(line)
			for _, t := range tg.Status.Tasks {
				d.line("   " + taskLine(t))
			}
			if len(tg.Spec.GPUs) > 0 {
				d.line("   GPUs " + planGPUs(tg.Spec.GPUs))
			}
			if tg.Status.GPUProblem != "" {
				d.line("   GPU problem: " + tg.Status.GPUProblem)
			}
			if r := tg.Status.Remote; r != nil {
				state := "passing"
				if !r.Healthy {
					state = "failing: " + r.Message
				}
				d.line("   remote checks " + state)
			}
		}
	})
}

func taskLine(t v4.TaskStatus) string {
	parts := []string{t.Name, t.Status}
	if t.Role != "" {
		parts = append(parts, t.Role)
	}
	if t.Info.Pid > 0 {
		parts = append(parts, fmt.Sprintf("pid %d", t.Info.Pid))
	}
	if t.Status == v4.StatusFailed || t.Status == v4.StatusFinish {
		parts = append(parts, fmt.Sprintf("exit %d", t.Info.ExitCode))
	}
	if t.Info.OOMKilled {
		parts = append(parts, "OOMKilled")
	}
	if t.Healthy != nil {
		parts = append(parts, map[bool]string{true: "healthy", false: "unhealthy"}[*t.Healthy])
	}
	if t.Ready != nil {
		parts = append(parts, map[bool]string{true: "ready", false: "not ready"}[*t.Ready])
	}
	s := strings.Join(parts, ", ")
	for _, m := range []string{t.Message, t.HealthMessage} {
		if m != "" {
			s += ": " + m
		}
	}
	return s
}
