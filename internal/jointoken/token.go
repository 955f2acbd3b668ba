// Package jointoken is the format of berth's join tokens (docs/security.md, Join tokens):
// "berth-<id>.<secret>", where the id names the token in listings and revocations and the
// secret is known only to who holds the token (the cluster keeps its SHA-256). A token as
// handed to an agent also carries the CA's hash, "berth-<id>.<secret>::sha256:<hex>", so
// the agent can pin the cluster's CA on first contact, as `kubeadm join
// --discovery-token-ca-cert-hash` does.
package jointoken

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/berthhq/berth/internal/pki"
)

const (
	prefix    = "berth-"
	pinSep    = "::"
	idLen     = 6
	secretLen = 32
	alphabet  = "abcdefghijklmnopqrstuvwxyz0123456789"
)

var (
	idPattern     = regexp.MustCompile(`^[a-z0-9]{6}$`)
	secretPattern = regexp.MustCompile(`^[a-z0-9]{16,64}$`)
)

// Token is a parsed join token.
type Token struct {
	ID     string
	Secret string
	// CAHash is the CA pin the token carried ("" when it carried none).
	CAHash string
}

// String is the token without its CA hash: what the cluster authenticates.
func (t Token) String() string { return prefix + t.ID + "." + t.Secret }

// WithPin is the token as agents are given it, with the CA hash.
func (t Token) WithPin(caHash string) string { return t.String() + pinSep + caHash }

// SecretHash is what the cluster stores of the secret.
func (t Token) SecretHash() string { return HashSecret(t.Secret) }

// HashSecret is the hex SHA-256 of a token's secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Matches reports, in constant time, whether the secret hashes to hash.
func (t Token) Matches(hash string) bool {
	return subtle.ConstantTimeCompare([]byte(t.SecretHash()), []byte(hash)) == 1
}

// Parse reads "berth-<id>.<secret>" with an optional "::sha256:<hex>" CA hash. Its errors
// never repeat the secret.
func Parse(s string) (Token, error) {
	s = strings.TrimSpace(s)
	body, pin, hasPin := strings.Cut(s, pinSep)
	var t Token
	if hasPin {
		if err := pki.CheckPin(pin); err != nil {
			return t, fmt.Errorf("join token: %w", err)
		}
		t.CAHash = pin
	}
	rest, ok := strings.CutPrefix(body, prefix)
	if !ok {
		return t, fmt.Errorf("join token: want berth-<id>.<secret> (from `berth token create` or the server's data dir)")
	}
	id, secret, ok := strings.Cut(rest, ".")
	if !ok || !idPattern.MatchString(id) {
		return t, fmt.Errorf("join token: the id after berth- must be 6 lowercase letters or digits, then a '.'")
	}
	if !secretPattern.MatchString(secret) {
		return t, fmt.Errorf("join token %s: the secret must be 16 to 64 lowercase letters or digits", prefix+id)
	}
	t.ID, t.Secret = id, secret
	return t, nil
}

// ValidID says what is wrong with a token id, or returns nil.
func ValidID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("token id %q: want 6 lowercase letters or digits", id)
	}
	return nil
}

// New makes a random token.
func New() (Token, error) {
	id, err := randomString(idLen)
	if err != nil {
		return Token{}, err
	}
	secret, err := randomString(secretLen)
	if err != nil {
		return Token{}, err
	}
	return Token{ID: id, Secret: secret}, nil
}

// randomString draws n characters of alphabet uniformly (rejection sampling).
func randomString(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("make a join token: %w", err)
		}
		for _, b := range buf {
			// 252 = 7*36: bytes above it would favour the first letters.
			if b < 252 && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out), nil
}
