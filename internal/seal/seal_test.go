package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func ring(t *testing.T, keys ...Key) *Keyring {
	t.Helper()
	r, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpen(t *testing.T) {
	old, cur := NewKey(time.Unix(0, 0)), NewKey(time.Unix(1, 0))
	oldRing, rotated, curOnly := ring(t, old), ring(t, cur, old), ring(t, cur)
	plain, aad := []byte(`{"kind":"secret","datas":{"password":"hunter2"}}`), []byte("/berth/v1/objects/secret/ns/db")
	sealed := oldRing.Seal(plain, aad)
	if bytes.Contains(sealed, []byte("hunter2")) || !bytes.HasPrefix(sealed, []byte(Prefix+old.Name+":")) {
		t.Fatalf("sealed value %q", sealed)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	tests := []struct {
		name       string
		r          *Keyring
		value, aad []byte
		want       []byte
		sealed     bool
		err        string
	}{
		{"same ring", oldRing, sealed, aad, plain, true, ""},
		{"rotated ring opens the old key", rotated, sealed, aad, plain, true, ""},
		{"a ring without the key", curOnly, sealed, aad, nil, true, "does not have"},
		{"moved to another place", oldRing, sealed, []byte("/berth/v1/objects/secret/ns/other"), nil, true, "message authentication failed"},
		{"tampered", oldRing, tampered, aad, nil, true, "message authentication failed"},
		{"truncated", oldRing, sealed[:len(Prefix)+len(old.Name)+5], aad, nil, true, "truncated"},
		{"plaintext from before", curOnly, plain, aad, plain, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isSealed, err := tt.r.Open(tt.value, tt.aad)
			if isSealed != tt.sealed {
				t.Errorf("sealed = %v, want %v", isSealed, tt.sealed)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("Open = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, _, err := curOnly.Open(sealed, aad); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v, want ErrUnknownKey", err)
	}
	if !rotated.NeedsRewrap(sealed) || !rotated.NeedsRewrap(plain) || rotated.NeedsRewrap(rotated.Seal(plain, aad)) {
		t.Error("NeedsRewrap: want true for the old key and plaintext, false for the primary")
	}
	if a, b := oldRing.Seal(plain, aad), oldRing.Seal(plain, aad); bytes.Equal(a, b) {
		t.Error("two seals of one value are equal: the nonce is not fresh")
	}
}

func TestParseKeyFile(t *testing.T) {
	k := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize))
	short := base64.StdEncoding.EncodeToString([]byte("short"))
	tests := []struct {
		name, text string
		primary    string
		err        string
	}{
		{"one key", "a:" + k + "\n", "a", ""},
		{"comments and the first key seals", "# keys\n\nnew:" + k + "\nold:" + k + "\n", "new", ""},
		{"no key", "# nothing\n", "", "no key"},
		{"no colon", "a" + k, "", "line 1: want NAME:BASE64"},
		{"bad base64", "a:***", "", "line 1 (key \"a\"): not base64"},
		{"short key", "a:" + short, "", "5 bytes, want 32"},
		{"name twice", "a:" + k + "\na:" + k, "", "used twice"},
		{"bad name", "a b:" + k, "", "only letters"},
		{"too large", strings.Repeat("#", maxKeyFile+1), "", "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseKeyFile([]byte(tt.text))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || r.Primary() != tt.primary {
				t.Fatalf("ParseKeyFile = %v, %v; want primary %q", r, err, tt.primary)
			}
			again, err := ParseKeyFile(r.Format())
			if err != nil || again.Primary() != r.Primary() || len(again.Keys()) != len(r.Keys()) {
				t.Fatalf("Format does not parse back: %v", err)
			}
		})
	}
}

func TestKeyFileOnDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "encryption.key")
	r, created, err := LoadOrCreateKeyFile(path, nil)
	if err != nil || !created {
		t.Fatalf("create: %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	again, created, err := LoadOrCreateKeyFile(path, nil)
	if err != nil || created || again.Primary() != r.Primary() {
		t.Fatalf("load: created %v, %v; primary %q want %q", created, err, again.Primary(), r.Primary())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key file others can read: %v, want refused", err)
	}
}

// FuzzOpen: no stored value, however broken, makes Open panic, and whatever opens under
// a ring was sealed by it.
func FuzzOpen(f *testing.F) {
	r, err := NewKeyring(Key{Name: "k1", Secret: bytes.Repeat([]byte{1}, KeySize)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(r.Seal([]byte("secret"), []byte("key")), []byte("key"))
	f.Add([]byte(Prefix+"k1:"), []byte(""))
	f.Add([]byte(Prefix+"k2:abc"), []byte("key"))
	f.Add([]byte(`{"plain":true}`), []byte("key"))
	f.Fuzz(func(t *testing.T, value, aad []byte) {
		plain, sealed, err := r.Open(value, aad)
		if !sealed && (err != nil || !bytes.Equal(plain, value)) {
			t.Fatalf("plaintext not passed through: %v", err)
		}
	})
}

// FuzzParseKeyFile: no key file text makes the parser panic.
func FuzzParseKeyFile(f *testing.F) {
	f.Add([]byte("a:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize)) + "\n# c\n"))
	f.Add([]byte("a:b:c\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := ParseKeyFile(data); err == nil && r.Primary() == "" {
			t.Fatal("a ring without a primary key")
		}
	})
}
