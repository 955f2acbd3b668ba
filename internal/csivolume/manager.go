// Package csivolume stages and publishes the CSI volumes of the agent's pods
// (docs/volumes.md, "On the node"): a pod's `csi` volume is claimed through the server,
// staged once per volume on the node by the volume's node plugin, published onto the
// pod volume's directory, and unpublished, unstaged (when the node's last pod using it
// goes) and released when the pod goes. Each publication and each staging is recorded in
// the agent's data dir before the plugin is called, so that those of pods that went while
// the agent was down, or whose teardown failed, are undone by Run, retried with backoff
// and reported until they are.
package csivolume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/keylock"
	"github.com/berthhq/berth/internal/retrysweep"
)

// Claims are the server's agent routes for volume claims (POST /v1/agent/volumes/claim
// and /release).
type Claims interface {
	// Claim claims a volume for a task group of this node.
	Claim(ctx context.Context, req v4.CSIClaimRequest) (v4.CSIClaimGrant, error)
	// Release releases the claim; a claim the server does not have is no error.
	Release(ctx context.Context, req v4.CSIClaimRequest) error
}

// PluginClients are the node's CSI plugins (internal/csiplugins.Registry): the client of
// the plugin called name, with what its last probe found; ok is false for a plugin the
// node does not have.
type PluginClients interface {
	Client(name string) (*csi.Client, v4.CSIPlugin, bool)
}

// Options configure a Manager.
type Options struct {
	// StateDir holds the records of the publications and stagings (required): a
	// directory of the agent's data dir.
	StateDir string
	// StagingDir holds the volumes' staging directories, <StagingDir>/<plugin>/<hash of
	// the volume's ID> (required).
	StagingDir string
	Claims     Claims
	Plugins    PluginClients
	// SweepInterval is how often Run looks for publications of pods that are gone
	// (1 min when 0).
	SweepInterval time.Duration
	// Failed, when set, is told of each failed teardown of a pod that is gone: attempt
	// counts from 1, and the next try comes after a growing backoff.
	Failed func(r Record, attempt int, err error)
	Logger *slog.Logger
}

// Manager publishes and unpublishes pods' CSI volumes (the executor's CSIVolumes).
type Manager struct {
	opts Options
	log  *slog.Logger

	locks   keylock.Locks               // one call at a time per target dir, and per staging
	sweeper *retrysweep.Sweeper[Record] // failed teardowns of gone pods, by dir (sweep.go)
}

// New returns a Manager; nothing runs until a call or Run.
func New(o Options) (*Manager, error) {
	switch {
	case o.StateDir == "" || o.StagingDir == "":
		return nil, errors.New("csivolume: no state or staging directory")
	case !filepath.IsAbs(o.StagingDir):
		return nil, fmt.Errorf("csivolume: staging directory %q must be absolute", o.StagingDir)
	case o.Claims == nil || o.Plugins == nil:
		return nil, errors.New("csivolume: no claims or plugins")
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.StagingDir = filepath.Clean(o.StagingDir)
	m := &Manager{opts: o, log: o.Logger}
	m.sweeper = retrysweep.New(func(r Record) string { return r.Dir }, m.sweepFailed)
	return m, nil
}

// Publish claims volume v for task group taskGroup of namespace ns, the pod pod
// ("namespace/name"), stages it on the node unless a pod already did, and publishes it
// at dir, which must be a clean absolute path. A dir already published for the pod is
// left as it is. The record is written before each plugin call, so that a crash in
// between leaves a record the next start undoes rather than a mount nobody knows of.
func (m *Manager) Publish(ctx context.Context, pod, dir, ns, taskGroup string, v *v4.CSIVolumeSource) error {
	if err := checkTarget(dir); err != nil {
		return err
	}
	unlock, err := m.lock(ctx, pubLock(dir))
	if err != nil {
		return err
	}
	defer unlock()
	if rec, ok, err := m.loadRecord(dir); err != nil {
		return err
	} else if ok {
		if rec.Pod == pod && rec.Published && rec.Volume == v.Volume && rec.ReadOnly == v.ReadOnly {
			return nil
		}
		// A crash mid-publish, or the leftover of an earlier pod: undo it first.
		if err := m.teardown(ctx, rec); err != nil {
			return fmt.Errorf("undo the earlier publication at %s: %w", dir, err)
		}
	}
	rec := Record{Pod: pod, Dir: dir, Namespace: ns, TaskGroup: taskGroup, Volume: v.Volume, ReadOnly: v.ReadOnly,
		Created: time.Now().UTC()}
	if err := m.saveRecord(rec); err != nil {
		return err
	}
	if err := m.publish(ctx, &rec); err != nil {
		if terr := m.teardown(context.WithoutCancel(ctx), rec); terr != nil {
			m.log.Error("cannot undo a failed CSI publication; its record stays for a retry", "pod", pod, "volume", v.Volume, "dir", dir, "err", terr)
		}
		return err
	}
	m.log.Info("CSI volume published", "pod", pod, "volume", v.Volume, "plugin", rec.Plugin, "dir", dir, "readOnly", v.ReadOnly)
	return nil
}

// Unpublish unpublishes dir, unstages its volume when no other pod of the node uses it,
// releases the claim and forgets dir; a dir without a record is no error. On failure the
// record stays, and Run tries again once the pod is gone.
func (m *Manager) Unpublish(ctx context.Context, pod, dir string) error {
	if err := checkTarget(dir); err != nil {
		return err
	}
	unlock, err := m.lock(ctx, pubLock(dir))
	if err != nil {
		return err
	}
	defer unlock()
	rec, ok, err := m.loadRecord(dir)
	if err != nil || !ok {
		return err
	}
	if err := m.teardown(ctx, rec); err != nil {
		return fmt.Errorf("unpublish volume %s at %s: %w", rec.Volume, dir, err)
	}
	return nil
}

// checkTarget refuses a target the plugin, which runs as root, must not be handed.
func checkTarget(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("CSI target %q must be a clean absolute path", dir)
	}
	return nil
}

// plugin returns the client of the node's plugin name, refusing one that is missing or
// unhealthy.
func (m *Manager) plugin(name string) (*csi.Client, error) {
	c, info, ok := m.opts.Plugins.Client(name)
	switch {
	case !ok || c == nil:
		return nil, fmt.Errorf("CSI plugin %s is not running on this node", name)
	case !info.Healthy:
		msg := info.Message
		if msg == "" {
			msg = "its probe failed"
		}
		return nil, fmt.Errorf("CSI plugin %s is not healthy on this node: %s", name, msg)
	case !info.Node:
		return nil, fmt.Errorf("CSI plugin %s offers no node service on this node", name)
	}
	return c, nil
}
