// Package seal encrypts values at rest with AES-256-GCM under a ring of named keys: the
// first key seals, every key opens, so keys rotate as in Kubernetes' EncryptionConfiguration
// (docs/security.md, Encryption at rest). A sealed value carries the name of its key and is
// bound to where it is stored (the additional data), so a ciphertext moved to another key
// does not open.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Prefix starts every sealed value; the key's name and a ':' follow it, then the nonce and
// the ciphertext. Values without it are plaintext written before encryption was on.
const Prefix = "berth:aesgcm:v1:"

// KeySize is the size of a key: AES-256.
const KeySize = 32

// ErrUnknownKey is returned for a value sealed under a key the ring does not hold.
var ErrUnknownKey = errors.New("sealed with a key this server does not have")

// Key is one named key of a ring.
type Key struct {
	Name   string
	Secret []byte
}

// Keyring seals with its first key and opens with any of them.
type Keyring struct {
	keys  []Key
	aeads map[string]cipher.AEAD
}

// NewKeyring builds a ring of keys, the first of which seals. Names are 1 to 32 letters,
// digits, '-' or '_', each used once; every secret is KeySize bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("a keyring needs at least one key")
	}
	r := &Keyring{aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		if err := checkName(k.Name); err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if _, dup := r.aeads[k.Name]; dup {
			return nil, fmt.Errorf("key %d: the name %q is used twice", i+1, k.Name)
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("key %q: %d bytes, want %d (AES-256)", k.Name, len(k.Secret), KeySize)
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.Name, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.Name, err)
		}
		r.aeads[k.Name] = aead
		r.keys = append(r.keys, Key{Name: k.Name, Secret: bytes.Clone(k.Secret)})
	}
	return r, nil
}

// Primary is the name of the key that seals.
func (r *Keyring) Primary() string { return r.keys[0].Name }

// Keys returns the ring's keys, the sealing one first.
func (r *Keyring) Keys() []Key {
	out := make([]Key, len(r.keys))
	for i, k := range r.keys {
		out[i] = Key{Name: k.Name, Secret: bytes.Clone(k.Secret)}
	}
	return out
}

// Seal encrypts plain under the primary key, bound to aad (where the value is stored).
func (r *Keyring) Seal(plain, aad []byte) []byte {
	name := r.Primary()
	aead := r.aeads[name]
	out := make([]byte, 0, len(Prefix)+len(name)+1+aead.NonceSize()+len(plain)+aead.Overhead())
	out = append(out, Prefix...)
	out = append(out, name...)
	out = append(out, ':')
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, aad)
}

// Sealed reports whether value is sealed, and under which key.
func Sealed(value []byte) (key string, ok bool) {
	rest, ok := bytes.CutPrefix(value, []byte(Prefix))
	if !ok {
		return "", false
	}
	name, _, ok := bytes.Cut(rest, []byte(":"))
	if !ok || checkName(string(name)) != nil {
		return "", false
	}
	return string(name), true
}

// Open decrypts a sealed value bound to aad. A value without the prefix is returned as it
// is (plaintext stored before encryption was on), with sealed false.
func (r *Keyring) Open(value, aad []byte) (plain []byte, sealed bool, err error) {
	name, ok := Sealed(value)
	if !ok {
		return value, false, nil
	}
	aead, ok := r.aeads[name]
	if !ok {
		return nil, true, fmt.Errorf("%w: %q", ErrUnknownKey, name)
	}
	body := value[len(Prefix)+len(name)+1:]
	if len(body) < aead.NonceSize()+aead.Overhead() {
		return nil, true, fmt.Errorf("sealed value under key %q is truncated", name)
	}
	nonce, ct := body[:aead.NonceSize()], body[aead.NonceSize():]
	plain, err = aead.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, true, fmt.Errorf("open value sealed under key %q: %w", name, err)
	}
	return plain, true, nil
}

// NeedsRewrap reports whether value is plaintext or sealed under another key than the
// primary one.
func (r *Keyring) NeedsRewrap(value []byte) bool {
	name, ok := Sealed(value)
	return !ok || name != r.Primary()
}

func checkName(name string) error {
	if name == "" || len(name) > 32 {
		return fmt.Errorf("key name %q: want 1 to 32 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("key name %q: only letters, digits, '-' and '_'", name)
		}
	}
	return nil
}
