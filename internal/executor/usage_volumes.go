package executor

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// defaultVolumeUsageInterval is how often the disk emptyDirs with a sizeLimit are
// measured (Config.VolumeUsageInterval).
const defaultVolumeUsageInterval = 10 * time.Second

// watchVolumeUsage measures, every VolumeUsageInterval, the disk emptyDirs of the pod
// that have a sizeLimit, in a goroutine that ends with ctx (wg counts it), and sends the
// first one over its limit to the pod's evict channel: the pod fails, as the kubelet
// evicts it. A pod without such a volume starts nothing.
func (p *pod) watchVolumeUsage(ctx context.Context, wg *sync.WaitGroup) {
	var limited []*v4.PodVolume
	for i := range p.plan.volumes {
		if e := p.plan.volumes[i].EmptyDir; e != nil && e.Medium == v4.MediumDisk && e.SizeLimit != "" {
			limited = append(limited, &p.plan.volumes[i])
		}
	}
	if len(limited) == 0 {
		return
	}
	interval := p.e.cfg.VolumeUsageInterval
	if interval <= 0 {
		interval = defaultVolumeUsageInterval
	}
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if why := p.overLimit(ctx, limited); why != "" {
				select {
				case p.evict <- why:
				default: // one is enough
				}
				return
			}
		}
	})
}

// overLimit says which volume is over its sizeLimit, "" when none is.
func (p *pod) overLimit(ctx context.Context, vols []*v4.PodVolume) string {
	for _, v := range vols {
		mb, err := quantity(v.EmptyDir.SizeLimit)
		if err != nil || mb <= 0 {
			continue
		}
		limit := int64(math.Min(mb*(1<<20), math.MaxInt64/2))
		used, err := diskUsage(ctx, p.plan.volumeDir(v.Name), limit)
		if err != nil {
			if ctx.Err() == nil {
				p.e.log.Warn("emptyDir usage", "namespace", p.ns, "name", p.name, "volume", v.Name, "err", err)
			}
			continue
		}
		if used > limit {
			return fmt.Sprintf("emptyDir %s uses more than its sizeLimit of %s MB", v.Name, v.EmptyDir.SizeLimit)
		}
	}
	return ""
}

// diskUsage adds up the blocks of what dir holds (as du does; links are not followed),
// and stops once the sum passes stop: a tree of many files costs at most what it takes
// to pass the limit. Entries that vanish meanwhile are skipped.
func diskUsage(ctx context.Context, dir string, stop int64) (int64, error) {
	var used int64
	errStop := fs.SkipAll
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: the rest still counts
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			used += st.Blocks * 512
		}
		if used > stop {
			return errStop
		}
		return nil
	})
	return used, err
}

// Evict ends a running pod as failEvicted does (the revocable tier's evictions,
// docs/policy.md): false when the pod is unknown, not running yet, or already ending.
func (e *Executor) Evict(namespace, name, why string) bool {
	p := e.pod(namespace, name)
	if p == nil || p.killRequested() || p.snapshot().Phase != v4.StatusRunning {
		return false
	}
	select {
	case p.evict <- why:
		return true
	default:
		return false
	}
}

// failEvicted ends a running pod one of whose volumes passed its limit: every task is
// stopped with the kill grace (hooks run, as for a kill) and reported Failed, with a
// Warning event.
func (p *pod) failEvicted(ctx context.Context, why string) {
	p.e.log.Warn("evicting the task group", "namespace", p.ns, "name", p.name, "reason", why)
	if p.e.cfg.Event != nil {
		p.e.cfg.Event(p.ns, p.name, v4.EventWarning, "Evicted", why)
	}
	infos := p.stopAll(ctx, p.plan.grace, -1, true)
	p.endAll(v4.StatusFailed, "evicted: "+why, infos, nil, nil)
}
