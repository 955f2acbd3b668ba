package controller

import (
	"context"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// updateStatus writes the daemonset's status when it changed, retrying on conflicts with
// users' writes.
func (c *DaemonsetController) updateStatus(ctx context.Context, key scheduler.AppKey, st v4.DaemonsetStatus) error {
	return writeStored(ctx, c.store, key, func(ds *v4.Daemonset) error {
		old := ds.Status
		old.Updated = time.Time{}
		if old == st {
			return nil
		}
		if ds.Status.Phase != st.Phase {
			c.event(key, v4.EventNormal, "Status", fmt.Sprintf("daemonset %s/%s is %s (%d/%d nodes running)", key.Namespace, key.Name, st.Phase, st.Running, st.Desired))
		}
		st.Updated = time.Now().UTC()
		ds.Status = st
		return c.store.Update(ctx, ds, store.Raw{})
	})
}
