package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/jointoken"
)

// A user's token is "berth-acl-<id>.<secret>": the id names it in listings and
// revocations, the secret is known only to its holder (the cluster keeps its SHA-256).
const tokenPrefix = "berth-acl-"

var tokenPattern = regexp.MustCompile(`^berth-acl-([a-z0-9]{6})\.([a-z0-9]{16,64})$`)

// Secret is a token as its holder has it.
type Secret struct{ ID, Secret string }

func (s Secret) String() string { return tokenPrefix + s.ID + "." + s.Secret }

// ParseSecret reads a token; its errors never repeat the secret.
func ParseSecret(s string) (Secret, error) {
	m := tokenPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		if strings.HasPrefix(s, "berth-") && !strings.HasPrefix(s, tokenPrefix) {
			return Secret{}, fmt.Errorf("a join token is not a user's token: give a token of `berth acl token create`")
		}
		return Secret{}, fmt.Errorf("not a berth token: want berth-acl-<id>.<secret>")
	}
	return Secret{ID: m[1], Secret: m[2]}, nil
}

// NewSecret makes a random token.
func NewSecret() (Secret, error) {
	t, err := jointoken.New()
	if err != nil {
		return Secret{}, err
	}
	return Secret{ID: t.ID, Secret: t.Secret}, nil
}

// Token is what the cluster keeps of a user's token.
type Token struct {
	ID         string    `json:"id"`
	SecretHash string    `json:"secretHash,omitempty"`
	Name       string    `json:"name,omitempty"`
	Policies   []string  `json:"policies,omitempty"`
	Management bool      `json:"management,omitempty"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires,omitzero"`
}

// Matches reports, in constant time, whether s is this token's secret.
func (t *Token) Matches(s Secret) bool {
	return s.ID == t.ID && subtle.ConstantTimeCompare([]byte(jointoken.HashSecret(s.Secret)), []byte(t.SecretHash)) == 1
}

// Expired reports whether the token no longer works at now.
func (t *Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// CertBinding is what a user's client certificate carries of the token it stands for
// (docs/security.md, "Client certificates"): derived from the token's id and secret
// hash, so that a certificate never authenticates as a later token that happens to
// take a revoked one's id. It tells nothing of the secret.
func (t *Token) CertBinding() string {
	sum := sha256.Sum256([]byte("berth user certificate\x00" + t.ID + "\x00" + t.SecretHash))
	return hex.EncodeToString(sum[:16])
}

// HashOf is what the cluster keeps of a secret.
func HashOf(s Secret) string { return jointoken.HashSecret(s.Secret) }

// ValidID says what is wrong with a token id.
func ValidID(id string) error { return jointoken.ValidID(id) }

// Identity is who made a request: a token's holder, or anonymous.
type Identity struct {
	// TokenID and Name name the token ("" for anonymous).
	TokenID, Name string
	Management    bool
	Policies      []*Policy
	// Certificate says the token was shown by a client certificate bound to it, not
	// by its secret.
	Certificate bool
}

// Anonymous reports whether the request had no token.
func (id *Identity) Anonymous() bool { return id.TokenID == "" }

// Allowed reports whether the identity may do req.
func (id *Identity) Allowed(req Request) bool {
	if id.Management {
		return true
	}
	for _, p := range id.Policies {
		if p.Allows(req) {
			return true
		}
	}
	return false
}

// String names the identity in logs and errors.
func (id *Identity) String() string {
	s := "token berth-acl-" + id.TokenID
	switch {
	case id.Anonymous():
		return "anonymous"
	case id.Name != "":
		s = fmt.Sprintf("token berth-acl-%s (%s)", id.TokenID, id.Name)
	}
	if id.Certificate {
		s += " by its client certificate"
	}
	return s
}
