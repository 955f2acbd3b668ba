package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// Bounds of one page of a list.
const (
	// MaxPageLimit is the most objects one page returns.
	MaxPageLimit = 500
	// pageScanFactor bounds the keys one page reads when a filter drops most of them:
	// past limit*pageScanFactor keys the page ends early, with a continue token, so a
	// filter that matches nothing costs bounded work per request, not a scan of everything.
	pageScanFactor = 20
	// pageReadChunk is how many keys each read of a filtered page asks etcd for.
	pageReadChunk = 200
)

// Page asks for one page of a list: at most Limit objects whose key follows the
// Continue token's, that Match accepts (nil: all).
type Page struct {
	Limit    int
	Continue string
	Match    func(v4.Object) bool
}

// PageResult is one page: its objects in key order (by name within a namespace), the
// revision the whole list is read at, the token of the next page ("" at the end) and,
// for an unfiltered list, how many objects the whole list holds.
type PageResult struct {
	Items    []v4.Object
	Revision int64
	Continue string
	Total    int64 // -1 when filtered (counting would mean reading everything)
}

// continueToken is where the next page starts: after Key, at Revision, so every page of
// one list is read at the same revision (until etcd compacts it: ErrCompacted).
type continueToken struct {
	Revision int64  `json:"rev"`
	Key      string `json:"key"`
}

// ListPage reads one page of the objects of kind in ns ("" for all namespaces).
// A continue token from another list, or one that does not decode, is ErrInvalid; one
// whose revision etcd has compacted is ErrCompacted (list again from the start).
func (s *Store) ListPage(ctx context.Context, kind v4.Kind, ns string, p Page) (PageResult, error) {
	if err := checkKey(kind, ns, ""); err != nil {
		return PageResult{}, fmt.Errorf("list %s in %q: %w", kind, ns, err)
	}
	if p.Limit <= 0 || p.Limit > MaxPageLimit {
		return PageResult{}, fmt.Errorf("list %s: %w: limit %d is not within 1..%d", kind, ErrInvalid, p.Limit, MaxPageLimit)
	}
	pfx := objectPrefix(kind, ns)
	end := clientv3.GetPrefixRangeEnd(pfx)
	from, rev, err := startOf(p.Continue, pfx)
	if err != nil {
		return PageResult{}, fmt.Errorf("list %s: %w", kind, err)
	}
	res := PageResult{Total: -1}
	budget := p.Limit * pageScanFactor
	chunk := int64(p.Limit)
	if p.Match != nil {
		chunk = pageReadChunk
	}
	last, more := "", true
	for more && len(res.Items) < p.Limit && budget > 0 {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(min(chunk, int64(budget)))}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, from, opts...)
		if err != nil {
			return PageResult{}, fmt.Errorf("list %s in %q: %w", kind, ns, wrapEtcd(err))
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		budget -= len(resp.Kvs)
		more = resp.More
		for i, kv := range resp.Kvs {
			obj, err := s.decodeObject(kind, kv)
			if err != nil {
				return PageResult{}, fmt.Errorf("list %s in %q: %w", kind, ns, err)
			}
			last = string(kv.Key)
			if p.Match == nil || p.Match(obj) {
				res.Items = append(res.Items, obj)
			}
			if len(res.Items) == p.Limit {
				more = more || i < len(resp.Kvs)-1
				break
			}
		}
		from = last + "\x00"
	}
	// The page ends full, or with its scan budget spent, before the end of the list.
	if more && last != "" {
		res.Continue = encodeContinue(continueToken{Revision: rev, Key: last})
	}
	res.Revision = rev
	if p.Match == nil {
		resp, err := s.client.Get(ctx, pfx, clientv3.WithRange(end), clientv3.WithCountOnly(), clientv3.WithRev(rev))
		if err != nil {
			return PageResult{}, fmt.Errorf("count %s in %q: %w", kind, ns, wrapEtcd(err))
		}
		res.Total = resp.Count
	}
	return res, nil
}

// startOf is where a page starts: the first key of the list's prefix pfx, or the key
// after the continue token's, at its revision (0: the current one).
func startOf(token, pfx string) (from string, rev int64, err error) {
	if token == "" {
		return pfx, 0, nil
	}
	tok, err := decodeContinue(token)
	if err != nil || !strings.HasPrefix(tok.Key, pfx) || tok.Revision <= 0 {
		return "", 0, fmt.Errorf("%w: the continue token is not one of this list's", ErrInvalid)
	}
	return tok.Key + "\x00", tok.Revision, nil
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t) // two plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	if len(s) > 4096 {
		return t, fmt.Errorf("continue token too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal(b, &t)
}
