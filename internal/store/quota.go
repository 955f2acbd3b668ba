package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/quota"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Per-namespace storage limits (docs/store.md, "Namespace limits"): etcd's space quota is
// shared by every namespace, so without them one tenant could fill it and make every
// namespace's writes fail with 507. Each namespace may hold a bounded number of the
// objects users write (the kinds of v4.Kinds) and of bytes of them (their stored values
// and definitions). A namespace's usage is kept in a ledger key updated in the same
// transaction as every write of those kinds (quota_ledger.go), so it is exact across
// servers: two writes that race on a ledger cannot both pass.

// ErrQuotaExceeded refuses a write that would take a namespace past one of its limits
// (HTTP 403). Nothing of the write is stored.
var ErrQuotaExceeded = errors.New("namespace limit reached")

// DefaultNamespaceObjects is how many objects a namespace holds at most unless an
// administrator says otherwise.
const DefaultNamespaceObjects = 10_000

// defaultQuotaShare is the share of etcd's space quota one namespace may fill by default:
// eight namespaces at their limit fill the quota, and the first two or three tenants that
// fill theirs still leave room for everyone else and for berth's own records.
const defaultQuotaShare = 8

// externalQuotaBytes is the space quota assumed for an external etcd, whose own setting
// the store cannot read: etcd's default.
const externalQuotaBytes = 2 << 30

// NamespaceLimits bound one namespace. A zero Objects or Bytes means the cluster's
// default. Resources is its resource quota (a resource left out is not bounded) and
// LimitDefaults its tasks' default requests, limits and maxima (docs/policy.md, "Quotas
// and limit defaults"); both are judged at admission, by the server, not by the store.
type NamespaceLimits struct {
	Objects       int64           `json:"objects,omitempty"`
	Bytes         int64           `json:"bytes,omitempty"`
	Resources     quota.List      `json:"resources,omitempty"`
	LimitDefaults *quota.Defaults `json:"limitDefaults,omitempty"`
}

// IsZero reports limits that set nothing: the namespace has the cluster's defaults.
func (l NamespaceLimits) IsZero() bool {
	return l.Objects == 0 && l.Bytes == 0 && len(l.Resources) == 0 && l.LimitDefaults.IsZero()
}

// NamespaceUsage is what one namespace holds: its objects of the kinds users write and
// the bytes of their stored values and definitions.
type NamespaceUsage struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// NamespaceQuota is a namespace's limits (Default: the cluster's, none set for it) and
// its usage.
type NamespaceQuota struct {
	Namespace string          `json:"namespace"`
	Limits    NamespaceLimits `json:"limits"`
	Default   bool            `json:"default"`
	Usage     NamespaceUsage  `json:"usage"`
}

// Keys of the namespaces' limits (set by administrators) and ledgers (written with every
// counted write).
func limitsKey(ns string) string { return prefix + "nslimits/" + ns }
func usageKey(ns string) string  { return prefix + "nsusage/" + ns }

// counted reports whether writes of kind count against their namespace's limits: the
// kinds users write. Task groups, endpoints and events are berth's own records, bounded
// by what users wrote (instances of admitted workloads, one endpoints object per service)
// or by their own bounds (events), so a tenant's full namespace never stops the
// controllers or the agents' status reports.
func counted(kind v4.Kind) bool { return kind.Valid() && !kind.System() }

type enforceKey struct{}

// WithNamespaceLimits marks ctx as a user's request: its writes that grow a namespace are
// refused past the namespace's limits. Writes without it (the controllers', the agents')
// are counted but never refused, so a tenant at its limit cannot stop berth from
// recording the status of what it already runs.
func WithNamespaceLimits(ctx context.Context) context.Context {
	return context.WithValue(ctx, enforceKey{}, true)
}

func limitsEnforced(ctx context.Context) bool {
	on, _ := ctx.Value(enforceKey{}).(bool)
	return on
}

// quotaState is what a store remembers of namespaces' limits and ledgers.
type quotaState struct {
	defaults NamespaceLimits
	mu       sync.Mutex
	ledgers  map[string]ledger      // the last ledger this store read or wrote
	limits   map[string]limitsEntry // limits read lately
	lanes    ledgerLanes            // a namespace's ledger writes one at a time (quota_lanes.go)
	failed   atomic.Int64           // transactions with ledgers that failed (tests)
	objects  usageMemo              // objects decoded for resource usage (quota_resources.go)
}

type limitsEntry struct {
	limits NamespaceLimits
	set    bool // an administrator set them
	read   time.Time
}

// Bounds of the quota caches: entries are small, and a cache that fills up starts over
// (the next write of a namespace reads its ledger again).
const (
	quotaCacheSize = 4096
	// limitsTTL is how long limits read from etcd are used: a change by an administrator
	// takes effect within it on every server.
	limitsTTL = time.Second
)

// defaultLimits fills the zero fields of cfg with the defaults derived from etcd's space
// quota (quotaBytes).
func defaultLimits(cfg NamespaceLimits, quotaBytes int64) NamespaceLimits {
	return fillLimits(cfg, NamespaceLimits{Objects: DefaultNamespaceObjects, Bytes: quotaBytes / defaultQuotaShare})
}

// limitsFor returns ns's limits, the defaults where an administrator set none.
func (s *Store) limitsFor(ctx context.Context, ns string) (NamespaceLimits, bool, error) {
	s.quota.mu.Lock()
	e, ok := s.quota.limits[ns]
	s.quota.mu.Unlock()
	if ok && time.Since(e.read) < limitsTTL {
		return e.limits, e.set, nil
	}
	resp, err := s.client.Get(ctx, limitsKey(ns))
	if err != nil {
		return NamespaceLimits{}, false, fmt.Errorf("read the limits of namespace %s: %w", ns, wrapEtcd(err))
	}
	e = limitsEntry{read: time.Now()}
	if len(resp.Kvs) > 0 {
		if err := json.Unmarshal(resp.Kvs[0].Value, &e.limits); err != nil {
			return NamespaceLimits{}, false, fmt.Errorf("decode the limits of namespace %s: %w", ns, err)
		}
		e.set = true
	}
	e.limits = fillLimits(e.limits, s.quota.defaults)
	s.quota.mu.Lock()
	if len(s.quota.limits) >= quotaCacheSize {
		clear(s.quota.limits)
	}
	if s.quota.limits == nil {
		s.quota.limits = map[string]limitsEntry{}
	}
	s.quota.limits[ns] = e
	s.quota.mu.Unlock()
	return e.limits, e.set, nil
}

// Limits returns ns's limits (read at most limitsTTL ago), the defaults where an
// administrator set none, for the server's admission.
func (s *Store) Limits(ctx context.Context, ns string) (NamespaceLimits, error) {
	l, _, err := s.limitsFor(ctx, ns)
	return l, err
}

// fillLimits takes the fields of l that are not set from defaults.
func fillLimits(l, defaults NamespaceLimits) NamespaceLimits {
	if l.Objects <= 0 {
		l.Objects = defaults.Objects
	}
	if l.Bytes <= 0 {
		l.Bytes = defaults.Bytes
	}
	return l
}

// NamespaceQuota returns ns's limits and usage. It writes nothing: a namespace without a
// ledger yet is counted.
func (s *Store) NamespaceQuota(ctx context.Context, ns string) (NamespaceQuota, error) {
	if err := checkName("namespace", ns); err != nil {
		return NamespaceQuota{}, fmt.Errorf("namespace quota: %w: %w", ErrInvalid, err)
	}
	limits, set, err := s.limitsFor(ctx, ns)
	if err != nil {
		return NamespaceQuota{}, err
	}
	l, err := s.readLedger(ctx, ns)
	if err != nil {
		return NamespaceQuota{}, fmt.Errorf("namespace quota of %s: %w", ns, err)
	}
	return NamespaceQuota{Namespace: ns, Limits: limits, Default: !set, Usage: l.usage}, nil
}

// SetNamespaceLimits stores ns's limits (a zero field: the default) and counts its
// usage again from what it holds, which also repairs a ledger that drifted (see
// docs/store.md). Limits below the usage refuse further growth; nothing is deleted.
func (s *Store) SetNamespaceLimits(ctx context.Context, ns string, l NamespaceLimits) (NamespaceQuota, error) {
	if err := checkName("namespace", ns); err != nil {
		return NamespaceQuota{}, fmt.Errorf("set namespace limits: %w: %w", ErrInvalid, err)
	}
	if l.Objects < 0 || l.Bytes < 0 {
		return NamespaceQuota{}, fmt.Errorf("set the limits of namespace %s: %w: limits cannot be negative", ns, ErrInvalid)
	}
	val, err := json.Marshal(l)
	if err != nil {
		return NamespaceQuota{}, fmt.Errorf("set the limits of namespace %s: %w", ns, err)
	}
	op := clientv3.OpPut(limitsKey(ns), string(val))
	if l.IsZero() {
		op = clientv3.OpDelete(limitsKey(ns))
	}
	if _, err := s.client.Do(ctx, op); err != nil {
		return NamespaceQuota{}, fmt.Errorf("set the limits of namespace %s: %w", ns, wrapEtcd(err))
	}
	s.quota.mu.Lock()
	delete(s.quota.limits, ns)
	s.quota.mu.Unlock()
	if err := s.recount(ctx, ns); err != nil {
		return NamespaceQuota{}, err
	}
	return s.NamespaceQuota(ctx, ns)
}

// quotaError says which limit a write would pass, and how much ns holds.
func quotaError(ns string, held, delta NamespaceUsage, l NamespaceLimits) error {
	if delta.Objects > 0 && held.Objects+delta.Objects > l.Objects {
		return fmt.Errorf("%w: namespace %s holds %d objects, its limit (%d); delete some or ask an administrator to raise it",
			ErrQuotaExceeded, ns, held.Objects, l.Objects)
	}
	if delta.Bytes > 0 && held.Bytes+delta.Bytes > l.Bytes {
		return fmt.Errorf("%w: namespace %s holds %s and this write adds %s, past its limit of %s; delete some or ask an administrator to raise it",
			ErrQuotaExceeded, ns, bytesize.Format(held.Bytes), bytesize.Format(delta.Bytes), bytesize.Format(l.Bytes))
	}
	return nil
}
