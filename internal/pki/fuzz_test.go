package pki

import (
	"testing"
	"time"
)

// FuzzParseCSR: a CSR from the network never panics the parser, and what it accepts has a
// valid signature by an accepted key.
func FuzzParseCSR(f *testing.F) {
	csr, _, err := NewCSR("n1")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(csr)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCSR(data)
		if err != nil {
			return
		}
		if c.CheckSignature() != nil {
			t.Fatal("accepted a CSR with a bad signature")
		}
	})
}

// FuzzParseCertificates: PEM bundles from files or answers never panic the parser.
func FuzzParseCertificates(f *testing.F) {
	ca, err := NewCA("fuzz", time.Now())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.CertPEM)
	f.Add(append(append([]byte{}, ca.CertPEM...), ca.CertPEM...))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := ParseCertificates(data)
		if err == nil && len(certs) == 0 {
			t.Fatal("no error and no certificate")
		}
	})
}
