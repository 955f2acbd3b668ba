package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/bytesize"
)

// Recovery from a full etcd takes three steps, in this order: compact the whole
// history (to the current revision), defragment the members so their files shrink, then
// disarm the NOSPACE alarm, which etcd never lifts by itself (not even on a restart).
// Recover does it on request (POST /v1/cluster/recover) for every member it reaches;
// watchSpace does it by itself when it sees the alarm.

// recoverTimeout bounds a whole recovery: a compaction and one defragmentation per member.
const recoverTimeout = 10 * time.Minute

// Recover compacts etcd to its current revision, defragments every member it can reach,
// one at a time, and disarms the NOSPACE alarm when every member it reached is back
// under its quota.
func (s *Store) Recover(ctx context.Context) (cluster.Recovery, error) {
	return s.recoverSpace(ctx, true, 1)
}

// recoverSpace is Recover; all=false defragments only this server's embedded member (each
// server defragments its own), and disarming needs every member's use below maxUse of its
// quota.
func (s *Store) recoverSpace(ctx context.Context, all bool, maxUse float64) (cluster.Recovery, error) {
	ctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	var r cluster.Recovery
	alarms, err := s.Alarms(ctx)
	if err != nil {
		return r, err
	}
	r.AlarmBefore = slices.ContainsFunc(alarms, func(a cluster.Alarm) bool { return a.Type == "NOSPACE" })
	list, err := s.admin.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return r, fmt.Errorf("list etcd members: %w", wrapEtcd(err))
	}
	ids := make(map[string]uint64) // member IDs by endpoint, to find this server's own
	for _, m := range list.Members {
		if len(m.ClientURLs) > 0 {
			r.Members = append(r.Members, cluster.MemberRecovery{Name: m.Name, Endpoint: m.ClientURLs[0]})
			ids[m.ClientURLs[0]] = m.ID
		}
	}
	slices.SortFunc(r.Members, func(a, b cluster.MemberRecovery) int { return strings.Compare(a.Name, b.Name) })
	for i := range r.Members {
		s.memberSizes(ctx, &r.Members[i], false)
	}
	if r.CompactedTo, err = s.compactAll(ctx); err != nil {
		return r, err
	}
	for i := range r.Members {
		m := &r.Members[i]
		if m.Error != "" {
			continue
		}
		self := s.etcd != nil && ids[m.Endpoint] == uint64(s.etcd.Server.MemberID())
		if all || self || s.etcd == nil {
			if _, _, err := s.defragment(ctx, m.Endpoint, self); err != nil {
				m.Error = err.Error()
				continue
			}
			m.Defragmented = true
		}
		s.memberSizes(ctx, m, true)
	}
	fits, fullest := true, -1
	for i, m := range r.Members {
		if m.Error != "" {
			continue // unreachable: it refuses nothing while it is gone
		}
		if fullest < 0 || m.InUseAfter*r.Members[fullest].Quota > r.Members[fullest].InUseAfter*m.Quota {
			fullest = i
		}
		r.LiveData = r.LiveData || float64(m.InUseAfter) >= liveDataShare*float64(m.Quota)
		fits = fits && m.SizeAfter < m.Quota && float64(m.InUseAfter) < maxUse*float64(m.Quota)
	}
	if fullest < 0 {
		return r, fmt.Errorf("%w: no etcd member could be reached", ErrUnavailable)
	}
	if r.AlarmBefore && fits {
		resp, err := s.admin.AlarmDisarm(ctx, &clientv3.AlarmMember{})
		if err != nil {
			return r, fmt.Errorf("disarm the NOSPACE alarm: %w", wrapEtcd(err))
		}
		r.Disarmed = len(resp.Alarms) > 0
		s.forgetAlarms()
	}
	f := r.Members[fullest]
	s.space.mu.Lock()
	s.space.verdict = recoveryVerdict{liveData: r.LiveData && !r.Disarmed, inUse: f.InUseAfter, quota: f.Quota}
	s.space.mu.Unlock()
	r.Message = recoveryMessage(r, f)
	if r.Disarmed {
		s.log.Warn("etcd space recovered: NOSPACE alarm disarmed", "compactedTo", r.CompactedTo, "inUse", bytesize.Format(f.InUseAfter), "quota", bytesize.Format(f.Quota))
		ev := v4.Event{Type: v4.EventWarning, Reason: "EtcdSpaceRecovered", Name: "etcd", Message: r.Message}
		if err := s.RecordEvent(ctx, ev); err != nil {
			s.log.Warn("cannot record event", "reason", ev.Reason, "err", err)
		}
	}
	return r, nil
}

func recoveryMessage(r cluster.Recovery, fullest cluster.MemberRecovery) string {
	use := fmt.Sprintf("%s of the %s quota in use", bytesize.Format(fullest.InUseAfter), bytesize.Format(fullest.Quota))
	switch {
	case r.Disarmed && r.LiveData:
		return "NOSPACE alarm disarmed, but live data fills most of etcd (" + use + " after compacting all history): delete objects or raise --etcd-quota-bytes before it fills again"
	case r.Disarmed:
		return "etcd space recovered: history compacted, members defragmented, NOSPACE alarm disarmed; writes work again (" + use + ")"
	case r.LiveData:
		return "live data fills etcd (" + use + " after compacting all history): delete objects or restart the servers with a larger --etcd-quota-bytes, then run `berth cluster recover` again"
	case r.AlarmBefore:
		return "the NOSPACE alarm stays raised: a member is still over its quota (see the members' errors), " + use
	default:
		return "history compacted and members defragmented; no alarm was raised (" + use + ")"
	}
}

// compactAll compacts etcd to its current revision and waits until it is done.
func (s *Store) compactAll(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, compactKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("read etcd's revision: %w", wrapEtcd(err))
	}
	rev := resp.Header.Revision
	if _, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return 0, nil // already compacted to rev: nothing was written since
		}
		return 0, fmt.Errorf("compact etcd to revision %d: %w", rev, wrapEtcd(err))
	}
	return rev, nil
}

// memberSizes fills the sizes before or after from the member's status.
func (s *Store) memberSizes(ctx context.Context, m *cluster.MemberRecovery, after bool) {
	sctx, cancel := context.WithTimeout(ctx, memberStatusTimeout)
	st, err := s.admin.Status(sctx, m.Endpoint)
	cancel()
	if err != nil {
		m.Error = fmt.Sprintf("unreachable: %v", err)
		return
	}
	z := statusSizes(st)
	m.Quota = z.Quota
	if after {
		m.SizeAfter, m.InUseAfter = z.Size, z.InUse
	} else {
		m.SizeBefore, m.InUseBefore = z.Size, z.InUse
	}
}

// The NOSPACE watch: how often it looks, and how long it waits after an attempt that
// could not disarm (an operator has to delete objects first, or another server has to
// defragment its member).
const (
	spaceCheckInterval = 5 * time.Second
	recoverRetry       = 30 * time.Second
)

// watchSpace looks for the NOSPACE alarm until ctx ends and recovers by itself: each
// server compacts and defragments its own embedded member (with an external etcd,
// every member), and disarms once every member uses less than 80% of its quota, so
// the alarm is not raised again at once.
func (s *Store) watchSpace(ctx context.Context) {
	t := time.NewTicker(spaceCheckInterval)
	defer t.Stop()
	var lastAttempt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, memberStatusTimeout)
		noSpace, err := s.NoSpace(cctx)
		cancel()
		if err != nil || !noSpace || time.Since(lastAttempt) < recoverRetry {
			continue
		}
		if lastAttempt.IsZero() {
			s.log.Error("etcd is out of space (NOSPACE alarm): writes are refused; compacting and defragmenting to recover")
		}
		lastAttempt = time.Now()
		r, err := s.recoverSpace(ctx, false, liveDataShare)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.space.mu.Lock()
			s.space.verdict.failed = err.Error()
			s.space.mu.Unlock()
			s.log.Error("automatic etcd space recovery failed", "err", err)
		case r.Disarmed:
			lastAttempt = time.Time{}
		case !r.AlarmBefore:
			lastAttempt = time.Time{} // another server disarmed it meanwhile
		default:
			s.log.Error("automatic etcd space recovery could not disarm the NOSPACE alarm", "outcome", r.Message)
		}
	}
}
