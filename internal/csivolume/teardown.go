package csivolume

import (
	"context"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/codes"

	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/mountinfo"
)

// teardown undoes what the record says was done, in the reverse order, and forgets it:
// unpublish, unstage when no other publication of the node uses the staging, release
// the claim. Every step is idempotent, so a teardown that failed half way, or a record
// of a step that never ran, is simply torn down again. The caller holds dir's lock.
func (m *Manager) teardown(ctx context.Context, rec Record) error {
	if rec.Plugin != "" {
		c, ok := m.teardownClient(rec.Plugin)
		if !ok {
			return errPluginMissing(rec.Plugin)
		}
		if err := c.NodeUnpublish(ctx, rec.ExternalID, rec.Dir); err != nil && csi.Code(err) != codes.NotFound {
			return err
		}
		if rec.Published {
			m.log.Info("CSI volume unpublished", "pod", rec.Pod, "volume", rec.Volume, "plugin", rec.Plugin, "dir", rec.Dir)
		}
		if err := m.unstageUnused(ctx, c, rec.Plugin, rec.ExternalID, rec.Dir); err != nil {
			return err
		}
		if err := removeUnmounted(rec.Dir); err != nil {
			return err
		}
	}
	if err := m.opts.Claims.Release(ctx, rec.claim()); err != nil {
		return fmt.Errorf("release the claim of volume %s: %w", rec.Volume, err)
	}
	return m.dropRecord(rec.Dir)
}

// teardownClient is the plugin's client for undoing: an unhealthy plugin is still asked
// (its node service may well work); only a missing one cannot be.
func (m *Manager) teardownClient(name string) (*csi.Client, bool) {
	c, _, ok := m.opts.Plugins.Client(name)
	return c, ok && c != nil
}

// unstageUnused unstages the plugin's volume unless a publication on the node other
// than the one at except uses its staging. The staging's lock orders it with a Publish
// that stages the volume again: that one recorded its publication before taking the
// lock, so it is counted here. c nil (the sweep's) is looked up only when needed.
func (m *Manager) unstageUnused(ctx context.Context, c *csi.Client, plugin, externalID, except string) error {
	key := stageKey(plugin, externalID)
	unlock, err := m.lock(ctx, stageLock(key))
	if err != nil {
		return err
	}
	defer unlock()
	recs, err := m.Records()
	if err != nil {
		return err
	}
	for _, o := range recs {
		if o.Dir != except && o.Plugin == plugin && o.ExternalID == externalID {
			return nil
		}
	}
	if c == nil {
		var ok bool
		if c, ok = m.teardownClient(plugin); !ok {
			return errPluginMissing(plugin)
		}
	}
	return m.unstage(ctx, c, key)
}

// unstage unstages the staging recorded under key, if any, and forgets it. The caller
// holds its lock.
func (m *Manager) unstage(ctx context.Context, c *csi.Client, key string) error {
	st, ok, err := m.loadStage(key)
	if err != nil || !ok {
		return err
	}
	// Also when the stage never finished: NodeUnstage is idempotent, and a plugin
	// without STAGE_UNSTAGE_VOLUME is not asked.
	if err := c.NodeUnstage(ctx, st.ExternalID, st.Path); err != nil && csi.Code(err) != codes.NotFound {
		return err
	}
	if err := removeUnmounted(st.Path); err != nil {
		return err
	}
	if err := m.dropStage(key); err != nil {
		return err
	}
	m.log.Info("CSI volume unstaged", "plugin", st.Plugin, "path", st.Path)
	return nil
}

// mountTable is the kernel's mount table of the agent (a variable for tests).
var mountTable = mountinfo.Self

// removeUnmounted removes a target or staging directory once the plugin unmounted it.
// One with a mount left at or below it (a plugin that answered OK and unmounted
// nothing) is kept and is an error: removing it would reach into the volume.
func removeUnmounted(dir string) error {
	mps, err := mountinfo.Below(mountTable, dir)
	if err != nil {
		return err
	}
	if len(mps) > 0 {
		return fmt.Errorf("%s is still mounted after the plugin unmounted it", mps[0])
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// lock takes key's lock, waiting until ctx ends at most.
func (m *Manager) lock(ctx context.Context, key string) (func(), error) {
	unlock, err := m.locks.Lock(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("CSI volume (%s): %w", key, err)
	}
	return unlock, nil
}

// ErrPluginMissing is the error of a teardown that needs a plugin the node lacks (or
// has not found yet: at an agent's start its plugins register again).
var ErrPluginMissing = errors.New("the volume stays published until it is")

func errPluginMissing(name string) error {
	return fmt.Errorf("CSI plugin %s is not running on this node: %w", name, ErrPluginMissing)
}
