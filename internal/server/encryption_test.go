package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/seal"
	"github.com/berthhq/berth/internal/store"
)

// TestRewrapRoute: after the key file gains a new first key, POST /v1/encryption/rewrap
// seals the stored secret with it, and the server answers how many values it rewrote.
func TestRewrapRoute(t *testing.T) {
	ctx := context.Background()
	old := testStore.Keyring().Keys()
	cur := seal.NewKey(time.Now())
	rotated, err := seal.NewKeyring(append([]seal.Key{cur}, old...)...)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, store.Config{Endpoints: testStore.Endpoints(), EtcdTLS: testStore.ClientTLS(), Logger: quietLogger(), Keyring: rotated})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base := newTestServer(t, Config{}) // resets the store: the secret comes after
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/rw/secrets",
		`{"apiVersion":"v4","kind":"secret","metadata":{"name":"db","namespace":"rw"},"datas":{"p":{"content":"czNjcjN0"}}}`), http.StatusCreated)

	_, url := startTestServer(t, Config{}, st)
	r := call(t, http.MethodPost, url+"/v1/encryption/rewrap", "")
	wantStatus(t, r, http.StatusOK)
	var got cluster.Rewrapped
	// The secret's object and document (the test reset removed the canary).
	if err := json.Unmarshal(r.body, &got); err != nil || got.Key != cur.Name || got.Rewrapped != 2 {
		t.Fatalf("rewrap answered %s, want key %s and 2 values", r.body, cur.Name)
	}
	resp, err := st.Client().Get(ctx, "/berth/v1/objects/secret/rw/db")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(err)
	}
	if name, _ := seal.Sealed(resp.Kvs[0].Value); name != cur.Name {
		t.Fatalf("the secret is sealed with %q after rewrap, want %q", name, cur.Name)
	}
	obj, err := st.Get(ctx, v4.KindSecret, "rw", "db")
	if err != nil || !strings.Contains(obj.(*v4.Secret).Datas["p"].Content, "czNjcjN0") {
		t.Fatalf("read after rewrap: %v", err)
	}
}
