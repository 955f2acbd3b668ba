package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The limiter holds back a source past its burst of failures until its bucket refills;
// a credential accepted from that source lately, other sources, and requests without a
// credential pass all along.
func TestAuthLimiter(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l := &authLimiter{rate: 2, burst: 4, now: func() time.Time { return now }}
	const src, other = "10.0.0.7", "10.0.0.8"
	good, bad := "Bearer berth-acl-good01.secret", "Bearer berth-acl-zzzzzz.guess"
	l.succeeded(src, good)
	type step struct {
		name    string
		advance time.Duration
		fail    int // failures from src first
		source  string
		cred    string
		ok      bool
		wait    time.Duration // when !ok
	}
	steps := []step{
		{"a fresh source passes", 0, 0, src, bad, true, 0},
		{"within the burst", 0, 3, src, bad, true, 0},
		{"burst spent: held back", 0, 1, src, bad, false, 500 * time.Millisecond},
		{"the owner's credential passes", 0, 0, src, good, true, 0},
		{"another source passes", 0, 0, other, bad, true, 0},
		{"no credential passes", 0, 0, src, "", true, 0},
		{"half a token later, still held", 250 * time.Millisecond, 0, src, bad, false, 250 * time.Millisecond},
		{"a token later, one more try", 250 * time.Millisecond, 0, src, bad, true, 0},
		{"concurrent failures dig deeper", 0, 10, src, bad, false, 2500 * time.Millisecond}, // floor: -burst
		{"refilled", 3 * time.Second, 0, src, bad, true, 0},
		{"a proven credential expires", provenFor, 4, src, good, false, 500 * time.Millisecond},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			now = now.Add(s.advance)
			for range s.fail {
				l.failed(src)
			}
			wait, ok := l.admit(s.source, s.cred)
			if ok != s.ok || (!ok && wait != s.wait) {
				t.Fatalf("admit: ok=%v wait=%s, want ok=%v wait=%s", ok, wait, s.ok, s.wait)
			}
		})
	}
}

// Buckets and proven credentials are bounded: past maxLimited the refilled buckets go.
func TestAuthLimiterBounded(t *testing.T) {
	now := time.Now()
	l := &authLimiter{rate: 1, burst: 1, now: func() time.Time { return now }}
	for i := range maxLimited {
		l.failed(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255))
	}
	now = now.Add(time.Minute) // every bucket refilled
	l.failed("192.0.2.1")
	if len(l.sources) != 1 {
		t.Fatalf("%d buckets kept, want the new one", len(l.sources))
	}
	for i := range maxLimited + 1 {
		l.succeeded("192.0.2.1", fmt.Sprintf("Bearer %d", i))
	}
	if len(l.proven) > maxLimited {
		t.Fatalf("%d proven credentials kept", len(l.proven))
	}
}

// A source is an IPv4 address or an IPv6 /64, whatever the port.
func TestSourceOf(t *testing.T) {
	for remote, want := range map[string]string{
		"10.0.0.7:51234":                "10.0.0.7",
		"[::ffff:10.0.0.7]:1":           "10.0.0.7",
		"[2001:db8:1:2:3:4:5:6]:443":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:80":     "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:80":          "2001:db8:1:3::/64",
		"pipe":                          "pipe",
		"[fe80::1%eth0]:1":              "fe80::1%eth0",
		"192.0.2.1":                     "192.0.2.1",
		"[2001:db8::1]:8080":            "2001:db8::/64",
		"[2001:db8:0:0:1::]:8080":       "2001:db8::/64",
		"[2001:db8:0:1::]:8080":         "2001:db8:0:1::/64",
		"[::1]:1":                       "::/64",
		"127.0.0.1:1":                   "127.0.0.1",
		"[2001:db8:aaaa:bbbb:cccc::]:1": "2001:db8:aaaa:bbbb::/64",
	} {
		r := &http.Request{RemoteAddr: remote}
		if got := sourceOf(r); got != want {
			t.Errorf("sourceOf(%q) = %q, want %q", remote, got, want)
		}
	}
}
