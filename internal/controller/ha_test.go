package controller

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

// server is one "berth server" of these tests: its own store (etcd client), feed and
// manager, as separate processes would have.
type server struct {
	id    string
	store *store.Store
	mgr   *Manager
	stop  context.CancelFunc
	done  chan struct{}
}

func startServer(t *testing.T, st *store.Store, id string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{id: id, store: st, stop: cancel, done: make(chan struct{})}
	caches := cachetest.Registry(t, st, RegisterCaches)
	f := feed.New(caches, storetest.QuietLogger())
	s.mgr = NewManager(st, f, Options{Logger: storetest.QuietLogger(), Caches: caches}, id)
	s.mgr.ttl = 2
	go func() {
		defer close(s.done)
		fdone := make(chan struct{})
		go func() { f.Run(ctx); close(fdone) }()
		s.mgr.Run(ctx)
		<-fdone
	}()
	t.Cleanup(func() { s.stop(); <-s.done })
	return s
}

// leaders returns the servers whose manager leads.
func leaders(servers []*server) []*server {
	var out []*server
	for _, s := range servers {
		if s.mgr.Leader() {
			out = append(out, s)
		}
	}
	return out
}

// Two servers on one (external) etcd, each with its own client: exactly one leads, the
// election key names it, and when it stops the other takes over.
func TestManagersOnSharedEtcd(t *testing.T) {
	storetest.Reset(t, testStore)
	var servers []*server
	for _, id := range []string{"server-a", "server-b"} {
		st, err := store.Open(context.Background(), store.Config{Endpoints: testStore.Endpoints(), EtcdTLS: testStore.ClientTLS(), Logger: storetest.QuietLogger(), Keyring: testStore.Keyring()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		servers = append(servers, startServer(t, st, id))
	}
	waitFor(t, "a leader", func() bool { return len(leaders(servers)) == 1 })
	time.Sleep(500 * time.Millisecond) // a second leader would show by now
	l := leaders(servers)
	if len(l) != 1 {
		t.Fatalf("%d leaders", len(l))
	}
	if id, err := LeaderID(context.Background(), testStore); err != nil || id != l[0].id {
		t.Fatalf("LeaderID = %q, %v; want %q", id, err, l[0].id)
	}
	l[0].stop()
	<-l[0].done
	other := servers[0]
	if other == l[0] {
		other = servers[1]
	}
	waitFor(t, "the other server takes over", func() bool { return other.mgr.Leader() })
	if id, _ := LeaderID(context.Background(), testStore); id != other.id {
		t.Fatalf("LeaderID = %q after the handover, want %q", id, other.id)
	}
}

// Three servers, each with its embedded member of one etcd cluster. The leader's member
// goes away without resigning (as when its process is killed): one of the two others
// leads once the lease expires, on the quorum the two remaining members keep.
func TestManagerHandoverAfterMemberLoss(t *testing.T) {
	stores := storetest.Cluster(t, 3, 21500)
	var servers []*server
	for i, st := range stores {
		t.Cleanup(func() { st.Close() })
		servers = append(servers, startServer(t, st, []string{"s0", "s1", "s2"}[i]))
	}
	waitFor(t, "a leader", func() bool { return len(leaders(servers)) == 1 })
	old := leaders(servers)[0]
	// The member stops first, so the manager can neither resign nor revoke its lease.
	old.store.Close()
	old.stop()
	<-old.done
	var rest []*server
	for _, s := range servers {
		if s != old {
			rest = append(rest, s)
		}
	}
	waitFor(t, "a new leader among the two others", func() bool { return len(leaders(rest)) == 1 })
	id, err := LeaderID(context.Background(), rest[0].store)
	if err != nil || id != leaders(rest)[0].id {
		t.Fatalf("LeaderID = %q, %v; want %q", id, err, leaders(rest)[0].id)
	}
}
