package seal

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/atomicfile"
)

// A key file holds one key a line, `NAME:BASE64`, the sealing key first; blank lines and
// lines starting with '#' are skipped (docs/security.md, Encryption at rest).

// maxKeyFile bounds what ParseKeyFile reads: a ring of a few keys is a few hundred bytes.
const maxKeyFile = 64 << 10

// ParseKeyFile reads a key file's text. Errors name the line.
func ParseKeyFile(data []byte) (*Keyring, error) {
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("key file: %d bytes, more than %d", len(data), maxKeyFile)
	}
	var keys []Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("key file line %d: want NAME:BASE64", n)
		}
		secret, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("key file line %d (key %q): not base64: %w", n, name, err)
		}
		keys = append(keys, Key{Name: name, Secret: secret})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if len(keys) == 0 {
		return nil, errors.New("key file: no key")
	}
	r, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	return r, nil
}

// Format gives the key file text of the ring.
func (r *Keyring) Format() []byte {
	var b bytes.Buffer
	b.WriteString("# berth encryption keys: NAME:BASE64, the first one seals. Keep this file secret.\n")
	for _, k := range r.keys {
		fmt.Fprintf(&b, "%s:%s\n", k.Name, base64.StdEncoding.EncodeToString(k.Secret))
	}
	return b.Bytes()
}

// NewKey draws a new key named after the time and a random tag (k20261125T101500-3fa2),
// so two keys made in one second still differ.
func NewKey(now time.Time) Key {
	secret := make([]byte, KeySize)
	rand.Read(secret)
	tag := make([]byte, 2)
	rand.Read(tag)
	return Key{Name: fmt.Sprintf("k%s-%x", now.UTC().Format("20060102T150405"), tag), Secret: secret}
}

// LoadKeyFile reads the key file at path. The file must not be readable by others than
// its owner: it unlocks every secret of the cluster.
func LoadKeyFile(path string) (*Keyring, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("encryption key file %s has mode %v: others may read it; chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	r, err := ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// LoadOrCreateKeyFile reads the key file at path, or, when there is none, writes r (or,
// when r is nil, a new key) there with mode 0600 and returns it; created says which.
func LoadOrCreateKeyFile(path string, r *Keyring) (ring *Keyring, created bool, err error) {
	ring, err = LoadKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return ring, false, err
	}
	if r == nil {
		if r, err = NewKeyring(NewKey(time.Now())); err != nil {
			return nil, false, err
		}
	}
	if err := WriteKeyFile(path, r); err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// WriteKeyFile writes r to path atomically with mode 0600.
func WriteKeyFile(path string, r *Keyring) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("encryption key file: %w", err)
	}
	// Synced, directory included: a server that lost its keys after a crash could not
	// open the secrets it sealed.
	if err := atomicfile.Write(path, r.Format(), 0o600); err != nil {
		return fmt.Errorf("encryption key file: %w", err)
	}
	return nil
}
