package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// pageAll follows continue tokens to the end and returns the names of each page.
func pageAll(t *testing.T, ns string, limit int, match func(v4.Object) bool) ([][]string, []int64) {
	t.Helper()
	var pages [][]string
	var totals []int64
	tok := ""
	for range 100 {
		res, err := testStore.ListPage(context.Background(), v4.KindConfigMap, ns, Page{Limit: limit, Continue: tok, Match: match})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range res.Items {
			names = append(names, o.GetMeta().Name)
		}
		pages, totals = append(pages, names), append(totals, res.Total)
		if tok = res.Continue; tok == "" {
			return pages, totals
		}
	}
	t.Fatal("more than 100 pages")
	return nil, nil
}

func TestListPage(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	for i := range 25 {
		if err := testStore.Create(ctx, configMap("page-a", fmt.Sprintf("cm-%02d", i), "x"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := testStore.Create(ctx, configMap("page-b", "other", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	sevens := func(o v4.Object) bool { return strings.Contains(o.GetMeta().Name, "7") }
	none := func(v4.Object) bool { return false }
	tests := []struct {
		name   string
		ns     string
		limit  int
		match  func(v4.Object) bool
		pages  string // page sizes
		first  string
		totals int64
	}{
		{"pages of 10", "page-a", 10, nil, "10 10 5", "cm-00", 25},
		{"exact pages", "page-a", 5, nil, "5 5 5 5 5", "cm-00", 25},
		{"one page", "page-a", 500, nil, "25", "cm-00", 25},
		{"all namespaces", "", 20, nil, "20 6", "cm-00", 26},
		// The last match is not known to be the last until the rest is read.
		{"filtered", "page-a", 1, sevens, "1 1 0", "cm-07", -1},
		// A filter that matches nothing reads at most limit*pageScanFactor keys a page.
		{"scan budget", "page-a", 1, none, "0 0", "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pages, totals := pageAll(t, tt.ns, tt.limit, tt.match)
			var sizes []string
			for _, p := range pages {
				sizes = append(sizes, fmt.Sprint(len(p)))
			}
			if got := strings.Join(sizes, " "); got != tt.pages {
				t.Errorf("page sizes %q, want %q (%v)", got, tt.pages, pages)
			}
			first := ""
			if len(pages[0]) > 0 {
				first = pages[0][0]
			}
			if first != tt.first || totals[0] != tt.totals {
				t.Errorf("first %q total %d, want %q %d", first, totals[0], tt.first, tt.totals)
			}
		})
	}
}

// TestListPageConsistentAndHostile: later pages are read at the first page's revision;
// a token of another list, or garbage, is refused; a compacted revision says so.
func TestListPageConsistentAndHostile(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	for i := range 4 {
		if err := testStore.Create(ctx, configMap("page-c", fmt.Sprintf("cm-%d", i), "x"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := testStore.ListPage(ctx, v4.KindConfigMap, "page-c", Page{Limit: 2})
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	if err := testStore.Create(ctx, configMap("page-c", "cm-9", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	second, err := testStore.ListPage(ctx, v4.KindConfigMap, "page-c", Page{Limit: 2, Continue: first.Continue})
	if err != nil || len(second.Items) != 2 || second.Continue != "" || second.Revision != first.Revision {
		t.Fatalf("second page: %v %+v", err, second)
	}
	for _, tok := range []string{"garbage!", "e30", encodeContinue(continueToken{Revision: first.Revision, Key: objectKey(v4.KindSecret, "page-c", "x")}),
		encodeContinue(continueToken{Revision: 0, Key: objectKey(v4.KindConfigMap, "page-c", "cm-0")}), strings.Repeat("A", 5000)} {
		if _, err := testStore.ListPage(ctx, v4.KindConfigMap, "page-c", Page{Limit: 2, Continue: tok}); !errors.Is(err, ErrInvalid) {
			t.Errorf("token %.40q: %v, want ErrInvalid", tok, err)
		}
	}
	for _, limit := range []int{0, -1, MaxPageLimit + 1} {
		if _, err := testStore.ListPage(ctx, v4.KindConfigMap, "page-c", Page{Limit: limit}); !errors.Is(err, ErrInvalid) {
			t.Errorf("limit %d: %v, want ErrInvalid", limit, err)
		}
	}
	resp, err := testStore.Client().Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Client().Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.ListPage(ctx, v4.KindConfigMap, "page-c", Page{Limit: 2, Continue: first.Continue}); !errors.Is(err, ErrCompacted) {
		t.Errorf("compacted: %v, want ErrCompacted", err)
	}
}

// FuzzContinueToken: any token is refused or starts a page inside the list's own range,
// after the key it names, at a positive revision.
func FuzzContinueToken(f *testing.F) {
	pfx := objectPrefix(v4.KindConfigMap, "ns")
	f.Add(encodeContinue(continueToken{Revision: 7, Key: pfx + "a"}))
	f.Add(encodeContinue(continueToken{Revision: 7, Key: objectPrefix(v4.KindSecret, "ns") + "a"}))
	f.Add("")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, token string) {
		from, rev, err := startOf(token, pfx)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v", token, err)
			}
			return
		}
		if !strings.HasPrefix(from, pfx) || (token != "" && rev <= 0) {
			t.Fatalf("%q starts at %q rev %d", token, from, rev)
		}
	})
}
