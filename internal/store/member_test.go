package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/hostports/hostportstest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// bandPorts returns n free loopback ports from 21000-21499, the band these tests may
// use for fixed ports (a member's ports must stay the same across its restarts; the band
// lies below the kernel's ephemeral range, so no outgoing connection takes them).
func bandPorts(t *testing.T, n int) []int {
	t.Helper()
	return hostportstest.FreeInBand(t, n, 21000, 500)
}

// member is one member's flags and data dir.
type member struct {
	name, dir    string
	peer, client string
}

func newMembers(t *testing.T, n int) []member {
	ports := bandPorts(t, 2*n)
	out := make([]member, n)
	for i := range out {
		out[i] = member{name: fmt.Sprintf("m%d", i), dir: t.TempDir(),
			peer: fmt.Sprintf("127.0.0.1:%d", ports[2*i]), client: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
	}
	return out
}

func openMember(t *testing.T, m member, join JoinFunc) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := Open(ctx, Config{DataDir: m.dir, Logger: quietLogger(), KeyFile: filepath.Join(m.dir, "encryption.key"),
		Member: &MemberConfig{Name: m.name, PeerListen: m.peer, ClientListen: m.client, Join: join}})
	if err != nil {
		t.Fatalf("open member %s: %v", m.name, err)
	}
	return s
}

// joinThrough joins by calling AddMember on a running store, as the join route does.
func joinThrough(s *Store) JoinFunc {
	return func(ctx context.Context, name, peerURL string) (cluster.Joined, error) {
		for {
			ic, err := s.AddMember(ctx, name, peerURL)
			if !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
				cert, key, caErr := s.JoinCA()
				return cluster.Joined{InitialCluster: ic, EncryptionKeys: string(s.Keyring().Format()), CACert: string(cert), CAKey: string(key)},
					errors.Join(err, caErr)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
}

func readyWithin(s *Store, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Ready(ctx)
}

// Three members form a cluster by joining one after the other; a write on one is read
// on every other; with one member down the other two serve; with two down the last one
// is not ready; a stopped member restarted without flags (and without a join) comes back
// as the same member with its URLs, and the cluster serves again.
func TestEmbeddedClusterJoinAndRestart(t *testing.T) {
	ms := newMembers(t, 3)
	a := openMember(t, ms[0], nil)
	defer func() { a.Close() }()
	if !memberAlone(a.etcd.Server)() {
		t.Fatal("the first member is not alone in its cluster: its reads wait for raft")
	}
	b := openMember(t, ms[1], joinThrough(a))
	defer b.Close()
	// From the learner's addition on, reads are linearizable again on both.
	for i, s := range []*Store{a, b} {
		if memberAlone(s.etcd.Server)() {
			t.Fatalf("member %d reads alone in a cluster of two", i)
		}
	}
	c := openMember(t, ms[2], joinThrough(b)) // any member can take a join
	defer c.Close()

	ctx := context.Background()
	list, err := a.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d members, want 3: %+v", len(list), list)
	}
	leaders := 0
	for i, m := range list {
		if m.Name != ms[i].name || m.Learner || !m.Healthy || m.PeerURLs[0] != "https://"+ms[i].peer || m.ClientURLs[0] != "https://"+ms[i].client {
			t.Errorf("member %d: %+v, want %s, voting, healthy, with its URLs", i, m, ms[i].name)
		}
		if m.RaftLeader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d raft leaders, want 1", leaders)
	}
	if _, err := a.Client().Put(ctx, prefix+"ha-test", "written on a"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{b, c} {
		resp, err := s.Client().Get(ctx, prefix+"ha-test")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "written on a" {
			t.Fatalf("read on another member: %v %v", resp, err)
		}
	}
	// The joined servers got the first one's encryption key file: a secret sealed on
	// one opens on every other.
	if err := a.Create(ctx, secretObj("ha", "db", "sealed-on-a"), Raw{}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{b, c} {
		if s.Keyring().Primary() != a.Keyring().Primary() {
			t.Fatalf("member %d seals with %q, the cluster with %q", i+1, s.Keyring().Primary(), a.Keyring().Primary())
		}
		if obj, err := s.Get(ctx, v4.KindSecret, "ha", "db"); err != nil || obj.(*v4.Secret).Datas["password"].Content != "sealed-on-a" {
			t.Fatalf("member %d reads the secret sealed on the first: %v", i+1, err)
		}
		fi, err := os.Stat(filepath.Join(ms[i+1].dir, "encryption.key"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("member %d's key file: %v %v, want 0600", i+1, fi, err)
		}
	}

	a.Close()
	if err := readyWithin(b, 10*time.Second); err != nil {
		t.Fatalf("two of three members: %v", err)
	}
	if _, err := c.Client().Put(ctx, prefix+"ha-test", "written without a"); err != nil {
		t.Fatalf("write with two of three: %v", err)
	}
	b.Close()
	if err := readyWithin(c, 3*time.Second); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("one of three members is ready: %v", err)
	}

	// Restart a with no member flags at all: its record brings it back as m0.
	ctx2, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	a, err = Open(ctx2, Config{DataDir: ms[0].dir, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("restart m0 without flags: %v", err)
	}
	if a.MemberName() != "m0" {
		t.Errorf("restarted as %q", a.MemberName())
	}
	if err := readyWithin(c, 10*time.Second); err != nil {
		t.Fatalf("two of three after the restart: %v", err)
	}
	resp, err := a.Client().Get(ctx, prefix+"ha-test")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "written without a" {
		t.Fatalf("the restarted member missed a write: %v %v", resp, err)
	}
	a.Client().Delete(ctx, prefix+"ha-test", clientv3.WithPrefix())
}

// Bad joins and bad flags are refused with a clear error, and change nothing.
func TestMemberErrors(t *testing.T) {
	ms := newMembers(t, 2)
	a := openMember(t, ms[0], nil)
	defer a.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name, peer string
		want       error
		msg        string
	}{
		{"m0", "https://127.0.0.1:21999", ErrAlreadyExists, `a member named "m0" already exists`},
		{"other", "https://" + ms[0].peer, ErrAlreadyExists, `belongs to member "m0"`},
		{"m0", "https://" + ms[0].peer, ErrAlreadyExists, "restart it without --join"},
		{"bad name!", "https://127.0.0.1:21999", ErrInvalid, "member name"},
		{"ok", "ftp://x", ErrInvalid, "peer URL"},
		{"ok", "http://127.0.0.1:21999", ErrInvalid, "want https://host:port"},
		{"ok", "https://0.0.0.0:21999", ErrInvalid, "not an unspecified one"},
	} {
		_, err := a.AddMember(ctx, tc.name, tc.peer)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("AddMember(%s, %s) = %v, want %v with %q", tc.name, tc.peer, err, tc.want, tc.msg)
		}
	}
	if list, err := a.Members(ctx); err != nil || len(list) != 1 {
		t.Fatalf("refused joins changed the members: %+v %v", list, err)
	}

	// A store without a stable member cannot be joined.
	if _, err := testStore.AddMember(ctx, "x", "https://127.0.0.1:21999"); !errors.Is(err, ErrNotJoinable) {
		t.Errorf("join a random-port member: %v", err)
	}

	// A restart with a different peer URL is refused before etcd starts.
	a.Close()
	_, err := Open(ctx, Config{DataDir: ms[0].dir, Logger: quietLogger(),
		Member: &MemberConfig{Name: "m0", PeerListen: ms[1].peer, ClientListen: ms[0].client}})
	if err == nil || !strings.Contains(err.Error(), "--etcd-peer-listen gives") {
		t.Errorf("restart with another peer URL: %v", err)
	}
	// A first member whose etcd data is gone does not silently start a new cluster.
	if err := os.RemoveAll(filepath.Join(ms[0].dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Config{DataDir: ms[0].dir, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "holds no etcd data") {
		t.Errorf("restart without the etcd data: %v", err)
	}
	// Flag problems.
	for _, mc := range []MemberConfig{
		{Name: "x", PeerListen: ms[1].peer},
		{Name: "x", PeerListen: "nope", ClientListen: ms[1].client},
		{Name: "-x", PeerListen: ms[1].peer, ClientListen: ms[1].client},
	} {
		dir := t.TempDir()
		if _, err := Open(ctx, Config{DataDir: dir, Logger: quietLogger(), Member: &mc}); err == nil {
			t.Errorf("Open(%+v) succeeded", mc)
		}
		if _, err := os.Stat(filepath.Join(dir, memberFile)); err == nil {
			t.Errorf("Open(%+v) wrote a member record", mc)
		}
	}
	// A failed join writes nothing either: the next try starts afresh.
	dir := t.TempDir()
	_, err = Open(ctx, Config{DataDir: dir, Logger: quietLogger(), Member: &MemberConfig{Name: "m1", PeerListen: ms[1].peer, ClientListen: ms[1].client,
		Join: func(context.Context, string, string) (cluster.Joined, error) {
			return cluster.Joined{}, errors.New("refused")
		}}})
	if err == nil || !strings.Contains(err.Error(), "join: refused") {
		t.Errorf("failed join: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, memberFile)); err == nil {
		t.Error("a failed join wrote a member record")
	}
}
