package artifacts

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/store/storetest"
)

// stallingS3 accepts connections and never answers: a namespace's repository whose
// store hangs.
func stallingS3(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A namespace whose artifactrepository hangs does not hold up the collection of the
// others' artifacts: each delete has its own deadline, and a repository that failed is
// not tried again in the same round.
func TestGCStalledRepositoryDoesNotHoldOthers(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	createS3Repo(t, "a", "stall", stallingS3(t), false)
	e := openTestEmbedded(t, t.TempDir())
	r := NewRouter(RouterConfig{Store: testStore, Embedded: e, AllowPrivateEndpoints: true, Logger: storetest.QuietLogger()})
	for _, k := range []string{"a/gone/u1/n/x", "a/gone/u1/n/y", "a/gone/u1/n/z"} {
		if _, err := r.rec.link(ctx, k, Record{Repository: "stall", Digest: digestOf([]byte(k)), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Put(ctx, "b", "", "b/gone/u2/n/x", strings.NewReader("b's"), 100); err != nil {
		t.Fatal(err)
	}
	g := NewGC(r)
	g.deleteTimeout = 200 * time.Millisecond
	if err := g.Round(ctx); err == nil {
		t.Error("a round with a stalled repository reported no error")
	}
	if rec, err := r.Lookup(ctx, "b/gone/u2/n/x"); err != nil || rec != nil {
		t.Fatalf("namespace b's artifact of a gone workflow: %+v, %v; want freed", rec, err)
	}
	if rec, err := r.Lookup(ctx, "a/gone/u1/n/z"); err != nil || rec == nil {
		t.Fatalf("the stalled repository's record: %+v, %v; want kept for a later round", rec, err)
	}
}
