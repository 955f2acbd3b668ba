package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// recordSpread records n distinct events, one millisecond apart, over the namespaces in
// turn; the message is the event's index.
func recordSpread(t *testing.T, n int, namespaces ...string) time.Time {
	t.Helper()
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for i := range n {
		ns := namespaces[i%len(namespaces)]
		kind := v4.KindProcess
		if i%2 == 0 {
			kind = v4.KindConfigMap
		}
		e := v4.Event{Time: base.Add(time.Duration(i) * time.Millisecond), Reason: "Said", Kind: kind,
			Namespace: ns, Name: fmt.Sprintf("obj-%d", i%7), Message: fmt.Sprint(i)}
		if err := testStore.RecordEvent(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func TestEventsPaging(t *testing.T) {
	resetStore(t)
	const n = 1200
	recordSpread(t, n, "page-a", "page-b", "page-c")
	tests := []pagingCase{
		{"every namespace", v4.EventFilter{}, 500, 3, func(int) bool { return true }},
		{"one namespace", v4.EventFilter{Namespace: "page-b"}, 150, 3, func(i int) bool { return i%3 == 1 }},
		{"one kind", v4.EventFilter{Kind: v4.KindConfigMap}, 250, 3, func(i int) bool { return i%2 == 0 }},
		{"one object", v4.EventFilter{Namespace: "page-a", Kind: v4.KindProcess, Name: "obj-3"}, 20, 2,
			func(i int) bool { return i%3 == 0 && i%2 == 1 && i%7 == 3 }},
		{"one name everywhere", v4.EventFilter{Kind: v4.KindProcess, Name: "obj-1"}, 50, 2,
			func(i int) bool { return i%2 == 1 && i%7 == 1 }},
		{"default limit", v4.EventFilter{}, 0, 3, func(int) bool { return true }},
	}
	for _, tt := range tests {
		for _, newest := range []bool{false, true} {
			testEventsPaging(t, tt, n, newest)
		}
	}
}

// testEventsPaging reads every page of a list of the records recordSpread wrote, oldest
// or newest first, and checks it holds the records want picks, in order, over wantPages.
func testEventsPaging(t *testing.T, tt pagingCase, n int, newest bool) {
	name := tt.name
	if newest {
		name += " newest first"
	}
	t.Run(name, func(t *testing.T) {
		var want []string
		for i := range n {
			if tt.want(i) {
				want = append(want, fmt.Sprint(i))
			}
		}
		if newest {
			slices.Reverse(want)
		}
		var got []string
		pages, cont, rev := 0, "", int64(0)
		for {
			page, err := testStore.ListEventsPageOrder(context.Background(), tt.filter, tt.limit, cont, newest)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if rev == 0 {
				rev = page.Revision
			} else if page.Revision != rev {
				t.Fatalf("page %d read revision %d, the first %d", pages, page.Revision, rev)
			}
			if max := tt.limit; max == 0 && len(page.Items) > DefaultEventLimit || max > 0 && len(page.Items) > max {
				t.Fatalf("page %d: %d items over limit %d", pages, len(page.Items), tt.limit)
			}
			for _, e := range page.Items {
				if !tt.filter.Match(e) {
					t.Fatalf("page %d: %+v does not match %+v", pages, e, tt.filter)
				}
				if e.Reason == "Late" && !strings.HasPrefix(e.Message, name+" ") {
					continue // written while an earlier case paged
				}
				got = append(got, e.Message)
			}
			if page.Continue == "" {
				break
			}
			cont = page.Continue
			// Writes between pages do not show: the list reads one revision.
			if err := testStore.RecordEvent(context.Background(), v4.Event{Reason: "Late", Kind: v4.KindProcess,
				Namespace: "page-b", Name: "obj-late", Message: fmt.Sprint(name, " ", pages)}); err != nil {
				t.Fatal(err)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %d records %v\nwant %d in time order %v", len(got), got, len(want), want)
		}
		if pages != tt.wantPages {
			t.Errorf("%d pages, want %d", pages, tt.wantPages)
		}
		if newest && cont != "" {
			// A token of one order is refused by the other.
			if _, err := testStore.ListEventsPage(context.Background(), tt.filter, tt.limit, cont); !errors.Is(err, ErrInvalid) {
				t.Errorf("a newest-first token read oldest first: %v, want ErrInvalid", err)
			}
		}
	})
}

type pagingCase struct {
	name      string
	filter    v4.EventFilter
	limit     int
	wantPages int
	want      func(i int) bool // which of the recorded events the list holds
}

func TestEventsPageErrors(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	recordSpread(t, 5, "perr")
	first, err := testStore.ListEventsPage(ctx, v4.EventFilter{}, 2, "")
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	future := eventCursor{Rev: first.Revision + 1000, After: eventLogPrefix + "x"}.token()
	tests := []struct {
		name  string
		limit int
		cont  string
		want  error
	}{
		{"negative limit", -1, "", ErrInvalid},
		{"limit over the maximum", MaxEventLimit + 1, "", ErrInvalid},
		{"token not base64", 10, "!!", ErrInvalid},
		{"token of something else", 10, "eyJhIjoxfQ", ErrInvalid}, // {"a":1}
		{"token from the future", 10, future, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := testStore.ListEventsPage(ctx, v4.EventFilter{}, tt.limit, tt.cont); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}

	// A token whose revision etcd compacted is gone: 410, list again.
	resp, err := testStore.Client().Get(ctx, "compact-now")
	if err != nil {
		t.Fatal(err)
	}
	if err := testStore.RecordEvent(ctx, v4.Event{Reason: "After", Namespace: "perr", Message: "after"}); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Client().Compact(ctx, resp.Header.Revision+1, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []v4.EventFilter{{}, {Namespace: "perr"}} {
		if _, err := testStore.ListEventsPage(ctx, f, 2, first.Continue); !errors.Is(err, ErrCompacted) {
			t.Fatalf("continue at a compacted revision (filter %+v): got %v, want ErrCompacted", f, err)
		}
	}
}
