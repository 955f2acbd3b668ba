package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/bytesize"
)

// etcd's space (docs/operations.md): etcd refuses writes once its database file reaches
// the quota, and stays so (across restarts too) until its NOSPACE alarm is disarmed. The
// file only shrinks when a member is defragmented, and history only goes when it is
// compacted; compact.go does both routinely, recover.go when the alarm is raised.

// Quota bounds (Config.QuotaBytes, --etcd-quota-bytes).
const (
	// DefaultQuotaBytes is etcd's suggested maximum; etcd's own default is 2 GiB.
	DefaultQuotaBytes int64 = 8 << 30
	// MinQuotaBytes leaves room for etcd's own bookkeeping and a few objects.
	MinQuotaBytes int64 = 16 << 20
	// MaxQuotaBytes: etcd warns above 8 GiB (slower start-up and defragmentation);
	// beyond this it is almost certainly a typo.
	MaxQuotaBytes int64 = 64 << 30
)

// CheckQuotaBytes tells whether n is a usable embedded etcd quota.
func CheckQuotaBytes(n int64) error {
	if n < MinQuotaBytes || n > MaxQuotaBytes {
		return fmt.Errorf("%w: etcd quota %d bytes must be between %s and %s", ErrInvalid, n, bytesize.Format(MinQuotaBytes), bytesize.Format(MaxQuotaBytes))
	}
	return nil
}

// Thresholds of the space checks.
const (
	// alarmCacheTTL: /readyz and the NOSPACE watch ask often; the alarm list is a raft
	// request, so one answer serves for this long.
	alarmCacheTTL = 2 * time.Second
	// liveDataShare of the quota still in use after a compaction to the current
	// revision means live data, not history, fills etcd: only deleting objects or a
	// larger quota helps, and the automatic recovery does not disarm the alarm (it
	// would be raised again at once).
	liveDataShare = 0.8
)

// spaceState is what this store knows of etcd's space between calls.
type spaceState struct {
	mu sync.Mutex
	// The cached answer of the alarm list.
	noSpace   bool
	alarmErr  error
	alarmRead time.Time
	// verdict of the last recovery while the alarm was raised (recover.go).
	verdict recoveryVerdict
	// lastDefrag of the embedded member by the compactor (compact.go).
	lastDefrag time.Time
	// defragMu makes the compactor's and a recovery's defragmentations take turns.
	defragMu sync.Mutex
}

// recoveryVerdict is the outcome of the last recovery attempt, for the advice.
type recoveryVerdict struct {
	liveData     bool   // too much still in use after compaction
	inUse, quota int64  // of the fullest member
	failed       string // why the last automatic attempt could not finish
}

// Alarms lists etcd's raised alarms (uncached).
func (s *Store) Alarms(ctx context.Context) ([]cluster.Alarm, error) {
	resp, err := s.client.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list etcd alarms: %w", wrapEtcd(err))
	}
	out := make([]cluster.Alarm, 0, len(resp.Alarms))
	for _, a := range resp.Alarms {
		out = append(out, cluster.Alarm{Member: fmt.Sprintf("%x", a.MemberID), Type: a.Alarm.String()})
	}
	s.rememberAlarms(out, nil)
	return out, nil
}

func (s *Store) rememberAlarms(alarms []cluster.Alarm, err error) {
	noSpace := false
	for _, a := range alarms {
		noSpace = noSpace || a.Type == etcdserverpb.AlarmType_NOSPACE.String()
	}
	sp := &s.space
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.noSpace, sp.alarmErr, sp.alarmRead = noSpace, err, time.Now()
	if !noSpace && err == nil {
		sp.verdict = recoveryVerdict{}
	}
}

// NoSpace reports whether etcd's NOSPACE alarm is raised, from an answer at most
// alarmCacheTTL old.
func (s *Store) NoSpace(ctx context.Context) (bool, error) {
	sp := &s.space
	sp.mu.Lock()
	if !sp.alarmRead.IsZero() && time.Since(sp.alarmRead) < alarmCacheTTL {
		defer sp.mu.Unlock()
		return sp.noSpace, sp.alarmErr
	}
	sp.mu.Unlock()
	_, err := s.Alarms(ctx)
	if err != nil {
		s.rememberAlarms(nil, err)
		return false, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.noSpace, nil
}

// forgetAlarms makes the next NoSpace ask etcd (after a disarm).
func (s *Store) forgetAlarms() {
	s.space.mu.Lock()
	s.space.alarmRead = time.Time{}
	s.space.mu.Unlock()
}

// SpaceAdvice says, while the NOSPACE alarm is raised, whether berth can free the space
// by itself or the operator must act; it is part of every 507 answer.
func (s *Store) SpaceAdvice() string {
	s.space.mu.Lock()
	v := s.space.verdict
	s.space.mu.Unlock()
	if v.liveData {
		return fmt.Sprintf("live data fills etcd: %s of the %s quota is still in use after compacting all history. "+
			"Delete objects (berth delete) or restart the servers with a larger --etcd-quota-bytes, then run `berth cluster recover`",
			bytesize.Format(v.inUse), bytesize.Format(v.quota))
	}
	msg := "berth is compacting and defragmenting etcd to free the space of old revisions (or run `berth cluster recover`); retry in a few seconds"
	if v.failed != "" {
		msg += "; the last attempt failed: " + v.failed
	}
	return msg + ". If live data fills the quota, delete objects or raise --etcd-quota-bytes"
}

// Space reports the alarms, the advice and the last periodic compaction.
func (s *Store) Space(ctx context.Context) cluster.Space {
	var sp cluster.Space
	alarms, err := s.Alarms(ctx)
	if err != nil {
		sp.AlarmsError = err.Error()
	}
	sp.Alarms = alarms
	for _, a := range alarms {
		sp.NoSpace = sp.NoSpace || a.Type == etcdserverpb.AlarmType_NOSPACE.String()
	}
	if sp.NoSpace {
		sp.Advice = s.SpaceAdvice()
	}
	if c, err := s.lastCompaction(ctx); err == nil {
		sp.LastCompaction = c
	}
	return sp
}

// memberSizes is one member's database as its status reports it.
type memberSizes struct {
	Size, InUse, Quota int64
}

// statusSizes reads the sizes from a status answer; etcd before 3.6 does not report
// the quota, which then is etcd's default.
func statusSizes(st *clientv3.StatusResponse) memberSizes {
	q := st.DbSizeQuota
	if q == 0 {
		q = 2 << 30
	}
	return memberSizes{Size: st.DbSize, InUse: st.DbSizeInUse, Quota: q}
}
