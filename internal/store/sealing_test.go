package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/seal"
)

func testKeyring(keys ...seal.Key) *seal.Keyring {
	r, err := seal.NewKeyring(keys...)
	if err != nil {
		panic(err) // fresh keys of the right size cannot be refused
	}
	return r
}

func secretObj(ns, name, value string) *v4.Secret {
	return &v4.Secret{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindSecret},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns},
		Datas:    map[string]v4.SecretData{"password": {Content: value}},
	}
}

// etcdValues returns every value stored under the secret's keys (object and document).
func etcdValues(t *testing.T, s *Store, ns, name string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, key := range []string{objectKey(v4.KindSecret, ns, name), rawKey(v4.KindSecret, ns, name)} {
		resp, err := s.client.Get(context.Background(), key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v (%d values)", key, err, len(resp.Kvs))
		}
		out = append(out, resp.Kvs[0].Value)
	}
	return out
}

// TestSecretsSealedAtRest: etcd holds no plaintext of a secret however it was written
// (create, update, apply), while every read gives it back; a configmap stays readable.
func TestSecretsSealedAtRest(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	const plain = "hunter2-plaintext"
	if err := s.Create(ctx, secretObj("seal", "created", plain), Raw{ContentType: ContentTypeJSON, Data: []byte(`{"datas":{"password":{"content":"` + plain + `"}}}`)}); err != nil {
		t.Fatal(err)
	}
	upd := secretObj("seal", "created", plain+"-2")
	if err := s.Update(ctx, upd, Raw{}); err != nil {
		t.Fatal(err)
	}
	doc := v4.Document{Object: secretObj("seal", "applied", plain), Raw: []byte(`{"kind":"secret","datas":{"password":{"content":"` + plain + `"}}}`)}
	if _, err := s.Apply(ctx, []v4.Document{doc}); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, v4.KindSecret, "seal", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"created", "applied"} {
		for _, v := range etcdValues(t, s, "seal", name) {
			if bytes.Contains(v, []byte(plain)) || !bytes.HasPrefix(v, []byte(seal.Prefix)) {
				t.Fatalf("%s: etcd holds %.80q", name, v)
			}
		}
		obj, err := s.Get(ctx, v4.KindSecret, "seal", name)
		if err != nil || !strings.HasPrefix(obj.(*v4.Secret).Datas["password"].Content, plain) {
			t.Fatalf("get %s: %v", name, err)
		}
		raw, err := s.GetRaw(ctx, v4.KindSecret, "seal", name)
		if err != nil || !bytes.Contains(raw.Data, []byte(plain)) {
			t.Fatalf("definition of %s: %q %v", name, raw.Data, err)
		}
		if ev := next(t, ch); !strings.HasPrefix(ev.Object.(*v4.Secret).Datas["password"].Content, plain) {
			t.Fatalf("watch: %+v", ev.Object)
		}
	}
	if err := s.Create(ctx, configMap("seal", "cm", plain), Raw{}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.client.Get(ctx, objectKey(v4.KindConfigMap, "seal", "cm"))
	if err != nil || !bytes.Contains(resp.Kvs[0].Value, []byte(plain)) {
		t.Fatalf("a configmap is stored as it is: %v", err)
	}
}

// TestKeyRotation: a server with another key file refuses to start; a ring with a new
// first key reads what the old key sealed and seals new writes with the new key; Rewrap
// moves everything to the new key, after which the old key can go.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, cur := seal.NewKey(time.Unix(1, 0)), seal.NewKey(time.Unix(2, 0))
	first := openOwnStore(t, Config{DataDir: dir, Keyring: testKeyring(old)})
	if err := first.Create(ctx, secretObj("rot", "db", "old-secret"), Raw{}); err != nil {
		t.Fatal(err)
	}
	endpoints := []string{first.self}

	_, err := Open(ctx, Config{Endpoints: endpoints, EtcdTLS: first.ClientTLS(), Logger: quietLogger(), Keyring: testKeyring(cur)})
	if err == nil || !strings.Contains(err.Error(), `encrypted with key "`+old.Name+`"`) {
		t.Fatalf("a server without the cluster's key: %v, want refused naming the key", err)
	}

	rotated := openOwnStore(t, Config{Endpoints: endpoints, EtcdTLS: first.ClientTLS(), Keyring: testKeyring(cur, old)})
	if obj, err := rotated.Get(ctx, v4.KindSecret, "rot", "db"); err != nil || obj.(*v4.Secret).Datas["password"].Content != "old-secret" {
		t.Fatalf("the rotated ring reads the old key's secret: %v", err)
	}
	if err := rotated.Create(ctx, secretObj("rot", "new", "new-secret"), Raw{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range etcdValues(t, rotated, "rot", "new") {
		if name, _ := seal.Sealed(v); name != cur.Name {
			t.Fatalf("a new write is sealed with %q, want the first key %q", name, cur.Name)
		}
	}
	n, err := rotated.Rewrap(ctx)
	if err != nil || n != 3 { // db's object and document, and the canary
		t.Fatalf("rewrap: %d, %v; want 3 values", n, err)
	}
	if n, err := rotated.Rewrap(ctx); err != nil || n != 0 {
		t.Fatalf("a second rewrap: %d, %v; want nothing to do", n, err)
	}
	newOnly := openOwnStore(t, Config{Endpoints: endpoints, EtcdTLS: first.ClientTLS(), Keyring: testKeyring(cur)})
	for _, name := range []string{"db", "new"} {
		if _, err := newOnly.Get(ctx, v4.KindSecret, "rot", name); err != nil {
			t.Fatalf("after rewrap, the new key alone reads %s: %v", name, err)
		}
	}
	// Secrets stored before encryption was on are read, and rewrap seals them.
	if _, err := first.client.Put(ctx, objectKey(v4.KindSecret, "rot", "plain"), `{"apiVersion":"v4","kind":"secret","metadata":{"name":"plain","namespace":"rot"}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := newOnly.Get(ctx, v4.KindSecret, "rot", "plain"); err != nil {
		t.Fatalf("a plaintext secret from before: %v", err)
	}
	if n, err := newOnly.Rewrap(ctx); err != nil || n != 1 {
		t.Fatalf("rewrap of a plaintext secret: %d, %v", n, err)
	}
	resp, err := first.client.Get(ctx, objectKey(v4.KindSecret, "rot", "plain"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(err)
	}
	if name, _ := seal.Sealed(resp.Kvs[0].Value); name != cur.Name {
		t.Fatalf("after rewrap the old plaintext secret is %.60q, want sealed with %q", resp.Kvs[0].Value, cur.Name)
	}
}
