package csivolume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/recorddir"
)

// publish makes the calls of Publish after the first record: claim, stage, publish,
// recording what each step will need undone before it runs.
func (m *Manager) publish(ctx context.Context, rec *Record) error {
	grant, err := m.opts.Claims.Claim(ctx, rec.claim())
	if err != nil {
		return fmt.Errorf("claim volume %s: %w", rec.Volume, err)
	}
	if err := checkGrant(grant); err != nil {
		return fmt.Errorf("volume %s: %w", rec.Volume, err)
	}
	c, err := m.plugin(grant.Plugin)
	if err != nil {
		return fmt.Errorf("volume %s: %w", rec.Volume, err)
	}
	rec.Plugin, rec.ExternalID = grant.Plugin, grant.ExternalID
	if err := m.saveRecord(*rec); err != nil {
		return err
	}
	req := csi.NodeRequest{
		VolumeID: grant.ExternalID, Capability: capabilityOf(grant), PublishContext: grant.PublishContext,
		VolumeContext: grant.Context, Secrets: grant.Secrets, StagingPath: m.stagingPath(grant.Plugin, grant.ExternalID),
		TargetPath: rec.Dir, ReadOnly: rec.ReadOnly,
	}
	staged, err := m.stage(ctx, c, req)
	if err != nil {
		return fmt.Errorf("stage volume %s: %w", rec.Volume, err)
	}
	// The plugin mounts at dir as root: a link put there would carry the mount elsewhere.
	if err := os.MkdirAll(rec.Dir, 0o750); err != nil {
		return fmt.Errorf("publish volume %s: %w", rec.Volume, err)
	}
	if fi, err := os.Lstat(rec.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("publish volume %s: %s is not a directory (a link?)", rec.Volume, rec.Dir)
	}
	if err := c.NodePublish(ctx, req, staged); err != nil {
		return fmt.Errorf("publish volume %s: %w", rec.Volume, err)
	}
	rec.Published = true
	return m.saveRecord(*rec)
}

// stage stages the volume of req on the node unless a pod already did, and reports
// whether the plugin staged it (one without STAGE_UNSTAGE_VOLUME has nothing to stage).
// The staging record is written before the call and counts as done only after it.
func (m *Manager) stage(ctx context.Context, c *csi.Client, req csi.NodeRequest) (bool, error) {
	key := stageKey(c.Plugin(), req.VolumeID)
	unlock, err := m.lock(ctx, stageLock(key))
	if err != nil {
		return false, err
	}
	defer unlock()
	st, ok, err := m.loadStage(key)
	if err != nil {
		return false, err
	}
	if ok && st.Done {
		return st.Staged, nil
	}
	st = stageRecord{Plugin: c.Plugin(), ExternalID: req.VolumeID, Path: req.StagingPath}
	if err := m.saveStage(st); err != nil {
		return false, err
	}
	if err := mkdirClosed(req.StagingPath, m.opts.StagingDir); err != nil {
		return false, err
	}
	staged, err := c.NodeStage(ctx, req)
	if err != nil {
		return false, err
	}
	st.Done, st.Staged = true, staged
	return staged, m.saveStage(st)
}

// pluginName is the form of a CSI plugin's name (as api/v4 admits it): it names a
// directory under the staging dir, so nothing else may pass.
var pluginName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// maxExternalID bounds a volume's ID (CSI recommends at most 128 bytes; some plugins
// use more).
const maxExternalID = 1024

// checkGrant refuses a grant the node cannot use: a plugin name that is not one, an
// empty or oversized volume ID, a block device (the node publishes file systems only).
func checkGrant(g v4.CSIClaimGrant) error {
	switch {
	case !pluginName.MatchString(g.Plugin) || strings.Contains(g.Plugin, ".."):
		return fmt.Errorf("the server's grant names plugin %q, which is no plugin name", g.Plugin)
	case g.ExternalID == "" || len(g.ExternalID) > maxExternalID:
		return fmt.Errorf("the server's grant has a volume ID of %d bytes (1 to %d)", len(g.ExternalID), maxExternalID)
	case g.AttachmentMode == v4.AttachBlockDevice:
		return fmt.Errorf("a block-device volume cannot be used by a pod yet: this node publishes %s volumes only", v4.AttachFileSystem)
	}
	return nil
}

// capabilityOf is how the grant says the volume is used.
func capabilityOf(g v4.CSIClaimGrant) csi.Capability {
	c := csi.Capability{AccessMode: g.AccessMode}
	if g.MountOptions != nil {
		c.FSType, c.MountFlags = g.MountOptions.FSType, g.MountOptions.Flags
	}
	return c
}

// stagingPath is the volume's staging directory: one per plugin and volume ID (hashed,
// so that any ID makes one plain name).
func (m *Manager) stagingPath(plugin, externalID string) string {
	h := sha256.Sum256([]byte(externalID))
	return filepath.Join(m.opts.StagingDir, plugin, hex.EncodeToString(h[:]))
}

// stageKey names the staging record of a plugin's volume.
func stageKey(plugin, externalID string) string { return recorddir.Hash(plugin + "\x00" + externalID) }

func pubLock(dir string) string   { return "publish " + dir }
func stageLock(key string) string { return "stage " + key }
