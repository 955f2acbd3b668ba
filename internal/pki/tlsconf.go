package pki

import "crypto/tls"

// Every TLS connection berth makes or accepts (the API, agents' endpoints, the server's
// calls to agents, etcd's clients and peers, the CLI) is TLS 1.2 or 1.3 (docs/security.md,
// TLS). TLS 1.3 has only AEAD suites and Go does not let them be configured. For TLS 1.2,
// Go's default list still offers CBC suites with HMAC-SHA1 (Lucky13-style padding oracles,
// no forward-secure integrity), so berth names its own list: ECDHE key exchange (forward
// secrecy) with an AEAD cipher only.

// CipherSuites are the TLS 1.2 suites berth offers and accepts, strongest first: AES-GCM
// (hardware-accelerated on servers) and ChaCha20-Poly1305 (fast without AES
// instructions), for ECDSA certificates (the cluster CA's) and RSA ones (an operator's
// --tls-cert). HTTP/2 requires TLS_ECDHE_*_WITH_AES_128_GCM_SHA256, which is here.
func CipherSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// Hardened sets c's floor to TLS 1.2 and its TLS 1.2 suites to CipherSuites, and returns
// it, so a config literal reads `pki.Hardened(&tls.Config{...})`.
func Hardened(c *tls.Config) *tls.Config {
	if c.MinVersion < tls.VersionTLS12 {
		c.MinVersion = tls.VersionTLS12
	}
	c.CipherSuites = CipherSuites()
	return c
}
