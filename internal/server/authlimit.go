package server

import (
	"crypto/sha256"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Failed token guesses are slowed per source (docs/security.md, Users and policies). A
// source (an IPv4 address, or an IPv6 /64: one host holds a whole /64) has a bucket of
// failures: authFailBurst at once, refilled at authFailRate a second. While its bucket is
// empty, the source's requests with a token are answered 429 with Retry-After before the
// token is checked, so a guesser learns nothing more than authFailRate answers a second.
//
// The token's owner is not locked out by someone else's guesses from the same address (a
// NAT, a shared bastion): a credential that was accepted from the source lately is checked
// as always, whatever the bucket says. Nothing here touches requests from other sources,
// nor requests without a token (anonymous access has nothing to guess).

// Defaults of authLimiter.
const (
	authFailRate  = 5.0  // failures a source may sustain per second
	authFailBurst = 20.0 // and make at once
	// provenFor is how long a credential accepted from a source passes its bucket.
	provenFor = time.Hour
	// maxLimited bounds the sources and proven credentials kept; past it the oldest
	// knowledge is dropped (a flood from many addresses costs bounded memory).
	maxLimited = 10000
)

// authLimiter is the failures' buckets and the proven credentials. Its zero value uses
// the defaults.
type authLimiter struct {
	rate, burst float64
	now         func() time.Time // time.Now unless a test sets it

	mu      sync.Mutex
	sources map[string]*failBucket
	proven  map[[32]byte]time.Time // by provenKey: when the credential last passed
}

type failBucket struct {
	tokens float64
	at     time.Time // of the last refill
}

func (l *authLimiter) params() (rate, burst float64, now time.Time) {
	rate, burst = l.rate, l.burst
	if rate <= 0 {
		rate = authFailRate
	}
	if burst <= 0 {
		burst = authFailBurst
	}
	if l.now != nil {
		return rate, burst, l.now()
	}
	return rate, burst, time.Now()
}

// provenKey names a credential from a source without keeping the credential itself.
func provenKey(source, credential string) [32]byte {
	return sha256.Sum256([]byte(source + "\x00" + credential))
}

// refill brings b up to now (l.mu held).
func refill(b *failBucket, rate, burst float64, now time.Time) {
	if d := now.Sub(b.at).Seconds(); d > 0 {
		b.tokens = math.Min(burst, b.tokens+d*rate)
	}
	b.at = now
}

// admit says whether a request from source with credential ("" for none) may have its
// token checked; when not, how long the source should wait.
func (l *authLimiter) admit(source, credential string) (time.Duration, bool) {
	if credential == "" {
		return 0, true
	}
	rate, burst, now := l.params()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.sources[source]
	if b == nil {
		return 0, true
	}
	refill(b, rate, burst, now)
	if b.tokens >= 1 {
		return 0, true
	}
	if at, ok := l.proven[provenKey(source, credential)]; ok && now.Sub(at) < provenFor {
		return 0, true
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second)), false
}

// failed takes one failure from source's bucket. Requests admitted together may take it
// below zero, which makes the source wait longer; never below -burst.
func (l *authLimiter) failed(source string) {
	rate, burst, now := l.params()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.sources[source]
	if b == nil {
		if len(l.sources) >= maxLimited {
			l.sweepSources(rate, burst, now)
		}
		if l.sources == nil {
			l.sources = map[string]*failBucket{}
		}
		b = &failBucket{tokens: burst, at: now}
		l.sources[source] = b
	}
	refill(b, rate, burst, now)
	b.tokens = math.Max(b.tokens-1, -burst)
}

// succeeded remembers that credential was accepted from source.
func (l *authLimiter) succeeded(source, credential string) {
	if credential == "" {
		return
	}
	_, _, now := l.params()
	key := provenKey(source, credential)
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.proven[key]; ok && now.Sub(at) < time.Minute {
		return // fresh enough: no write per request
	}
	if len(l.proven) >= maxLimited {
		for k, at := range l.proven {
			if now.Sub(at) >= provenFor {
				delete(l.proven, k)
			}
		}
		if len(l.proven) >= maxLimited {
			l.proven = nil // too many live ones: their owners pass as newcomers for a while
		}
	}
	if l.proven == nil {
		l.proven = map[[32]byte]time.Time{}
	}
	l.proven[key] = now
}

// sweepSources drops the buckets that refilled (l.mu held); if every one is still in use,
// it drops the fullest rather than grow without bound: dropping them all would let a
// guesser with many addresses (an IPv6 /48 holds 65,536 sources) clear its own buckets.
func (l *authLimiter) sweepSources(rate, burst float64, now time.Time) {
	for src, b := range l.sources {
		if refill(b, rate, burst, now); b.tokens >= burst {
			delete(l.sources, src)
		}
	}
	if len(l.sources) >= maxLimited {
		fullest, most := "", -burst-1
		for src, b := range l.sources {
			if b.tokens > most {
				fullest, most = src, b.tokens
			}
		}
		delete(l.sources, fullest)
	}
}

// sourceOf is the limiter's source of r: its peer's IPv4 address, or its IPv6 /64.
// X-Forwarded-For is not read: a client could name any address there.
func sourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return sourceIP(host)
}

// sourceIP is the source an address counts as: itself, or its /64 for IPv6.
func sourceIP(host string) string {
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// retryAfter is the Retry-After header value for d: whole seconds, at least one.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
