package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
)

// The cluster CA is created once, by whichever server gets there first, and its key is
// sealed in etcd.
func TestEnsureCA(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	hashes := make([]string, 4)
	created := make([]bool, 4)
	for i := range hashes {
		wg.Go(func() {
			ca, c, err := testStore.EnsureCA(ctx, func() (*pki.CA, error) { return pki.NewCA("test", time.Now()) })
			if err != nil {
				t.Error(err)
				return
			}
			hashes[i], created[i] = ca.Hash(), c
		})
	}
	wg.Wait()
	n := 0
	for i, h := range hashes {
		if h != hashes[0] {
			t.Fatalf("server %d got CA %s, server 0 %s", i, h, hashes[0])
		}
		if created[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d servers say they created the CA", n)
	}
	resp, err := testStore.client.Get(ctx, caKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(err)
	}
	if v := string(resp.Kvs[0].Value); !strings.HasPrefix(v, "berth:aesgcm:v1:") || strings.Contains(v, "PRIVATE KEY") {
		t.Fatalf("the CA is stored in the clear: %.60s", v)
	}
	again, c, err := testStore.EnsureCA(ctx, func() (*pki.CA, error) { t.Fatal("created again"); return nil, nil })
	if err != nil || c || again.Hash() != hashes[0] {
		t.Fatalf("EnsureCA again: %v %v", c, err)
	}
}

func TestJoinTokens(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	now := time.Now()
	add := func(role string, expires time.Time) jointoken.Token {
		t.Helper()
		tok, err := jointoken.New()
		if err != nil {
			t.Fatal(err)
		}
		if err := testStore.CreateJoinToken(ctx, &JoinToken{ID: tok.ID, SecretHash: tok.SecretHash(), Role: role, Created: time.Now(), Expires: expires}); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	agent, server := add(v4.JoinRoleAgent, time.Time{}), add(v4.JoinRoleServer, now.Add(time.Hour))
	expired := add(v4.JoinRoleServer, now.Add(-time.Second))
	if err := testStore.CreateJoinToken(ctx, &JoinToken{ID: agent.ID, SecretHash: "x", Role: v4.JoinRoleAgent}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("duplicate id: %v", err)
	}
	if err := testStore.CreateJoinToken(ctx, &JoinToken{ID: "abcdef", Role: "root"}); err == nil {
		t.Fatal("role root accepted")
	}
	wrong := agent
	wrong.Secret += "x"
	for _, c := range []struct {
		tok  jointoken.Token
		role string
		want string
	}{
		{agent, v4.JoinRoleAgent, ""},
		{server, v4.JoinRoleAgent, ""},
		{server, v4.JoinRoleServer, ""},
		{agent, v4.JoinRoleServer, "needs a server token"},
		{expired, v4.JoinRoleAgent, "expired"},
		{wrong, v4.JoinRoleAgent, "unknown or revoked"},
		{jointoken.Token{ID: "zzzzzz", Secret: "0123456789abcdef"}, v4.JoinRoleAgent, "unknown or revoked"},
	} {
		_, err := testStore.CheckJoinToken(ctx, c.tok, c.role, now)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("token %s as %s: %v, want %q", c.tok.ID, c.role, err, c.want)
		}
	}
	list, err := testStore.JoinTokens(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if err := testStore.DeleteJoinToken(ctx, agent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.CheckJoinToken(ctx, agent, v4.JoinRoleAgent, now); err == nil {
		t.Fatal("a revoked token still works")
	}
	if err := testStore.DeleteJoinToken(ctx, agent.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
}
