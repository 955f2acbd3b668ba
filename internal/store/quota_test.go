package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// wantUsage checks ns's ledger and a count of what ns holds: both say objects, and the
// ledger's bytes are the counted ones.
func wantUsage(t *testing.T, ns string, objects int64) NamespaceUsage {
	t.Helper()
	ctx := context.Background()
	q, err := testStore.NamespaceQuota(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	counted, _, err := testStore.scanNamespace(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if q.Usage != counted || counted.Objects != objects {
		t.Fatalf("namespace %s: ledger %+v, counted %+v, want %d objects", ns, q.Usage, counted, objects)
	}
	return q.Usage
}

// resetForQuota empties the store and returns a context for berth's own writes, which
// namespace limits only count, and one for a user's, which they also limit.
func resetForQuota(t *testing.T) (bg, user context.Context) {
	t.Helper()
	resetStore(t)
	bg = context.Background()
	return bg, WithNamespaceLimits(bg)
}

func wantQuotaError(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrQuotaExceeded) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want ErrQuotaExceeded with %q", err, want)
	}
}

// A namespace filled to its object limit refuses the next user write, naming the limit,
// and stores nothing of it; another namespace still writes; updates in place, the
// system's writes and deletes go through, and a delete frees room.
func TestNamespaceObjectLimit(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	if _, err := s.SetNamespaceLimits(bg, "quota-a", NamespaceLimits{Objects: 3}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Create(user, configMap("quota-a", fmt.Sprintf("c%d", i), "x"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.Revision(bg)
	if err != nil {
		t.Fatal(err)
	}
	wantQuotaError(t, s.Create(user, configMap("quota-a", "c3", "x"), Raw{}), "namespace quota-a holds 3 objects, its limit (3)")
	_, err = s.Apply(user, docs(configMap("quota-a", "c0", "changed"), configMap("quota-a", "c4", "x")))
	wantQuotaError(t, err, "namespace quota-a holds 3 objects")
	if after, _ := s.Revision(bg); after != before {
		t.Errorf("a refused write moved the revision from %d to %d", before, after)
	}
	if _, err := s.Get(bg, v4.KindConfigMap, "quota-a", "c0"); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "quota-a", 3)

	// Other namespaces have their own limits (the default: 10,000 objects).
	for i := range 5 {
		if err := s.Create(user, configMap("quota-b", fmt.Sprintf("c%d", i), "x"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	wantUsage(t, "quota-b", 5)
	// An update that keeps the size, and apply of what is stored, pass at the limit.
	if err := s.Update(user, configMap("quota-a", "c1", "y"), Raw{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(user, docs(configMap("quota-a", "c0", "z"))); err != nil {
		t.Fatal(err)
	}
	// berth's own writes are counted, never refused.
	if err := s.Create(bg, configMap("quota-a", "system", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "quota-a", 4)
	for _, name := range []string{"c1", "system"} {
		if _, err := s.Delete(user, v4.KindConfigMap, "quota-a", name, ""); err != nil {
			t.Fatal(err)
		}
	}
	wantUsage(t, "quota-a", 2)
	if err := s.Create(user, configMap("quota-a", "c5", "x"), Raw{}); err != nil {
		t.Fatalf("after deletes: %v", err)
	}
	wantUsage(t, "quota-a", 3)
	q, err := s.NamespaceQuota(bg, "quota-b")
	if err != nil || !q.Default || q.Limits.Objects != DefaultNamespaceObjects || q.Limits.Bytes != DefaultQuotaBytes/8 {
		t.Fatalf("defaults: %+v %v", q, err)
	}
}

// The byte limit counts the stored objects and their definitions: a write that would
// pass it is refused, one that shrinks the namespace passes.
func TestNamespaceByteLimit(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	big := strings.Repeat("b", 4000)
	if err := s.Create(user, configMap("quota-c", "big", big), Raw{}); err != nil {
		t.Fatal(err)
	}
	held := wantUsage(t, "quota-c", 1)
	if _, err := s.SetNamespaceLimits(bg, "quota-c", NamespaceLimits{Bytes: held.Bytes + 1000}); err != nil {
		t.Fatal(err)
	}
	wantQuotaError(t, s.Create(user, configMap("quota-c", "more", big), Raw{}), "namespace quota-c holds")
	wantQuotaError(t, s.Update(user, configMap("quota-c", "big", big+big), Raw{}), "past its limit")
	if err := s.Update(user, configMap("quota-c", "big", "small"), Raw{}); err != nil {
		t.Fatalf("a smaller object: %v", err)
	}
	if err := s.Create(user, configMap("quota-c", "more", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "quota-c", 2)
	// Back to the defaults.
	if q, err := s.SetNamespaceLimits(bg, "quota-c", NamespaceLimits{}); err != nil || !q.Default {
		t.Fatalf("reset: %+v %v", q, err)
	}
}

// Writes racing on one namespace from two servers (two stores, each with its own cache
// of the ledger) never pass the limit together: exactly the limit's count is created.
func TestNamespaceLimitHoldsUnderRaces(t *testing.T) {
	bg, user := resetForQuota(t)
	other := &Store{client: testStore.client, log: testStore.log, keyring: testStore.keyring}
	other.quota.defaults = testStore.quota.defaults
	if _, err := testStore.SetNamespaceLimits(bg, "quota-race", NamespaceLimits{Objects: 20}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var created, refused int
	for i := range 40 {
		s := testStore
		if i%2 == 1 {
			s = other
		}
		wg.Go(func() {
			err := s.Create(user, configMap("quota-race", fmt.Sprintf("c%d", i), "x"), Raw{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, ErrQuotaExceeded):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if created != 20 || refused != 20 {
		t.Errorf("%d created, %d refused; want 20 and 20", created, refused)
	}
	wantUsage(t, "quota-race", 20)
}

// A namespace written before ledgers existed (or whose ledger was lost) is counted from
// what it holds, and its next write starts the ledger from that count.
func TestNamespaceWithoutLedgerIsCounted(t *testing.T) {
	resetStore(t)
	bg := context.Background()
	s := testStore
	for i := range 3 {
		if err := s.Create(bg, configMap("quota-old", fmt.Sprintf("c%d", i), "x"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client().Delete(bg, usageKey("quota-old")); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "quota-old", 3)
	// This store's cache still has the deleted ledger: its write fails once and reads again.
	if err := s.Create(WithNamespaceLimits(bg), configMap("quota-old", "c3", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "quota-old", 4)
	resp, err := s.Client().Get(bg, usageKey("quota-old"), clientv3.WithCountOnly())
	if err != nil || resp.Count != 1 {
		t.Fatalf("ledger: %v %v", resp, err)
	}
	// Task groups are berth's own records: not counted.
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: "0.web.quota-old.c.1", Namespace: "quota-old"}}
	if err := s.Create(bg, tg, Raw{}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "quota-old", 4)
}
