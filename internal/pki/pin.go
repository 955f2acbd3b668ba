package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
)

// A pin is how a new agent or server trusts the cluster before it has the CA: the join
// token carries the CA's hash, the server sends the CA after its certificate in the TLS
// handshake, and the newcomer accepts the connection only if one of the certificates sent
// is a CA with that hash and the server's certificate is valid under it for the address
// dialled (docs/security.md, Joining).

var pinPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// CheckPin says what is wrong with a CA pin, or returns nil.
func CheckPin(pin string) error {
	if !pinPattern.MatchString(pin) {
		return fmt.Errorf("CA hash %q: want sha256: and 64 lowercase hex digits", pin)
	}
	return nil
}

// PinnedConfig is a client TLS config that trusts the CA whose hash is pin, found in the
// server's handshake. onCA, if set, receives that CA once a handshake is verified, for the
// caller to keep.
func PinnedConfig(pin string, onCA func(*x509.Certificate)) *tls.Config {
	return Hardened(&tls.Config{
		// The standard verification needs the roots first; VerifyConnection does the
		// whole verification against the pinned CA instead.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			ca, err := VerifyPinned(cs.PeerCertificates, cs.ServerName, pin)
			if err != nil {
				return err
			}
			if onCA != nil {
				onCA(ca)
			}
			return nil
		},
	})
}

// VerifyPinned finds among certs (a server's handshake: its certificate first) the CA
// with hash pin and verifies the server's certificate for serverName under it.
func VerifyPinned(certs []*x509.Certificate, serverName, pin string) (*x509.Certificate, error) {
	if len(certs) == 0 {
		return nil, errors.New("the server sent no certificate")
	}
	var ca *x509.Certificate
	for _, c := range certs[1:] {
		if c.IsCA && Hash(c) == pin {
			ca = c
			break
		}
	}
	if ca == nil {
		return nil, &PinError{Msg: fmt.Sprintf("the server's certificates include no CA with hash %s: this is not the cluster the token was made for, or someone is in the way", pin)}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: serverName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, &PinError{Msg: "the server's certificate is not valid under the pinned CA", Err: err}
	}
	return ca, nil
}

// PinError is a server that fails the pin: retrying will not make it the cluster.
type PinError struct {
	Msg string
	Err error
}

func (e *PinError) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *PinError) Unwrap() error { return e.Err }
