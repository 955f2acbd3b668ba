package fake

import (
	"context"
	"fmt"

	"github.com/berthhq/berth/internal/driver"
)

var _ driver.UsageReader = (*Driver)(nil)

// SetUsage sets what Usage says task id uses.
func (d *Driver) SetUsage(id string, u driver.Usage) { d.locked(func() { d.usage[id] = u }) }

// Usage is what SetUsage set for the task: zero for a task it did not set, ErrNotFound for
// an unknown task.
func (d *Driver) Usage(_ context.Context, id string) (driver.Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; !ok {
		return driver.Usage{}, fmt.Errorf("usage of %s: %w", id, driver.ErrNotFound)
	}
	return d.usage[id], nil
}
