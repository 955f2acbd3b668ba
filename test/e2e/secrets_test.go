package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsEncryptedAtRest: a secret applied to a real server is nowhere in plain text
// in etcd's files (database and write-ahead log), reads give it back, the key file the
// server made is 0600, and a restart with the same data dir reads it again.
func TestSecretsEncryptedAtRest(t *testing.T) {
	dataDir := t.TempDir()
	s := startServer(t, dataDir)
	// The content is base64 (BCS's rule); neither it nor what it decodes to may be stored.
	clear := "plaintext-" + randomHex(8)
	marker := base64.StdEncoding.EncodeToString([]byte(clear))
	secret := fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"db-pass","namespace":"atrest"},
	"datas":{"password":{"content":%q}}}`, marker)
	s.applySpec(t, secret)
	readBack := func(s *devServer) {
		t.Helper()
		code, body, err := s.httpGet(s.url + "/v1/namespaces/atrest/secrets/db-pass")
		if err != nil || code != 200 || !strings.Contains(body, marker) {
			t.Fatalf("GET the secret: %d %v %.200s", code, err, body)
		}
	}
	readBack(s)
	for _, text := range []string{marker, clear} {
		if found := plaintextIn(t, filepath.Join(dataDir, "etcd"), text); len(found) > 0 {
			t.Fatalf("the secret is in plain text (%s) in %v", text, found)
		}
	}
	fi, err := os.Stat(filepath.Join(dataDir, "encryption.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	s.stop()
	readBack(startServer(t, dataDir))
}

// plaintextIn lists the files under dir that contain text.
func plaintextIn(t *testing.T, dir, text string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(text)) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
