package netsvc

import (
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Forwarding defaults.
const (
	defaultForwardTimeout = 2 * time.Second
	defaultCacheSize      = 10000
	// maxCacheTTL caps how long a forwarded answer is kept, whatever its TTL; negative
	// answers (no TTL of their own here) are kept negativeTTL.
	maxCacheTTL = 5 * time.Minute
	negativeTTL = 5 * time.Second
	// maxInflight bounds the forwarded queries waiting for an upstream at once: a
	// workload sending a flood of new names gets SERVFAIL beyond it, instead of growing
	// the agent by a goroutine per query for the upstream's timeout.
	maxInflight = 1024
)

// forwarder sends the queries for names outside the cluster to the node's upstream
// resolvers, trying each in turn, and caches their answers by question for their TTL,
// so a workload resolving the same external name in a loop costs one upstream query per
// TTL. The cache is bounded: when full, expired entries go first, then arbitrary ones.
type forwarder struct {
	upstreams []string
	udp, tcp  *dns.Client
	inflight  chan struct{} // a slot per forwarded query waiting for an upstream

	mu    sync.Mutex
	cache map[cacheKey]cached
	limit int
}

type cacheKey struct {
	name          string
	qtype, qclass uint16
	do            bool // the DNSSEC OK bit changes the answer
}

type cached struct {
	msg     *dns.Msg
	expires time.Time
}

func newForwarder(upstreams []string, timeout time.Duration, size int, self string) *forwarder {
	if timeout <= 0 {
		timeout = defaultForwardTimeout
	}
	if size <= 0 {
		size = defaultCacheSize
	}
	var ups []string
	for _, u := range upstreams {
		if u != self { // never forward to ourselves: a loop
			ups = append(ups, u)
		}
	}
	return &forwarder{upstreams: ups, limit: size, cache: map[cacheKey]cached{}, inflight: make(chan struct{}, maxInflight),
		udp: &dns.Client{Net: "udp", Timeout: timeout, UDPSize: dns.DefaultMsgSize},
		tcp: &dns.Client{Net: "tcp", Timeout: timeout}}
}

// forward answers req from the cache or an upstream; SERVFAIL when none answers,
// REFUSED when there is no upstream.
func (f *forwarder) forward(req *dns.Msg, overTCP bool) *dns.Msg {
	q := req.Question[0]
	o := req.IsEdns0()
	k := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, qclass: q.Qclass, do: o != nil && o.Do()}
	if m := f.cached(k); m != nil {
		m.Id = req.Id
		fit(m, req, overTCP)
		return m
	}
	fail := new(dns.Msg)
	if len(f.upstreams) == 0 {
		return fail.SetRcode(req, dns.RcodeRefused)
	}
	select {
	case f.inflight <- struct{}{}:
		defer func() { <-f.inflight }()
	default:
		return fail.SetRcode(req, dns.RcodeServerFailure)
	}
	for _, up := range f.upstreams {
		resp, _, err := f.udp.Exchange(req, up)
		if err == nil && resp.Truncated {
			resp, _, err = f.tcp.Exchange(req, up)
		}
		if err != nil || resp.Rcode == dns.RcodeServerFailure || resp.Rcode == dns.RcodeRefused {
			continue
		}
		f.store(k, resp)
		fit(resp, req, overTCP)
		return resp
	}
	return fail.SetRcode(req, dns.RcodeServerFailure)
}

// cached returns a copy of the cached answer for k, its TTLs lowered by its age.
func (f *forwarder) cached(k cacheKey) *dns.Msg {
	f.mu.Lock()
	c, ok := f.cache[k]
	f.mu.Unlock()
	if !ok {
		return nil
	}
	left := time.Until(c.expires)
	if left <= 0 {
		return nil
	}
	m := c.msg.Copy()
	ttl := uint32(left.Seconds())
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			if h := rr.Header(); h.Rrtype != dns.TypeOPT && h.Ttl > ttl {
				h.Ttl = ttl
			}
		}
	}
	return m
}

// store keeps an answer for the least TTL of its records.
func (f *forwarder) store(k cacheKey, m *dns.Msg) {
	ttl := maxCacheTTL
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) == 0 {
		ttl = negativeTTL
	}
	for _, rr := range m.Answer {
		if d := time.Duration(rr.Header().Ttl) * time.Second; d < ttl {
			ttl = d
		}
	}
	if ttl <= 0 {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cache) >= f.limit {
		for ck, c := range f.cache {
			if now.After(c.expires) {
				delete(f.cache, ck)
			}
		}
		// Still nearly full: drop a tenth, arbitrary entries (map order), so that a flood
		// of new names costs one scan per tenth of the cache, not one per name.
		for ck := range f.cache {
			if len(f.cache) < f.limit-f.limit/10 {
				break
			}
			delete(f.cache, ck)
		}
	}
	f.cache[k] = cached{msg: m.Copy(), expires: now.Add(ttl)}
}
