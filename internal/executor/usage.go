package executor

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Usage measures what each task of pod namespace/name uses now (driver.UsageReader). A
// task that cannot be measured (not started, a driver that cannot measure) says why in
// its Error; only an unknown pod is an error.
func (e *Executor) Usage(ctx context.Context, namespace, name string) ([]v4.TaskUsage, error) {
	p := e.pod(namespace, name)
	if p == nil {
		return nil, fmt.Errorf("%s/%s: %w", namespace, name, ErrUnknownPod)
	}
	out := make([]v4.TaskUsage, 0, len(p.plan.tasks))
	for i := range p.plan.tasks {
		t := &p.plan.tasks[i]
		tu := v4.TaskUsage{Name: t.name}
		r, ok := t.drv.(driver.UsageReader)
		switch {
		case t.drv == nil:
			tu.Error = fmt.Sprint(p.plan.err)
		case !ok:
			tu.Error = fmt.Sprintf("the %s driver cannot measure its tasks", t.drv.Name())
		default:
			u, err := r.Usage(ctx, t.id)
			if err != nil {
				tu.Error = err.Error()
				break
			}
			tu.CPUSeconds, tu.MemoryBytes, tu.MemoryLimitBytes = u.CPUSeconds, u.MemoryBytes, u.MemoryLimitBytes
		}
		out = append(out, tu)
	}
	return out, nil
}
