package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// pagedEvents serves GET /v1/events in pages: the continue token "p{n}" asks for page n.
// A token in gone answers 410, as for a compacted revision.
func pagedEvents(t *testing.T, pages [][]string, gone string) (*Client, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		cont := r.URL.Query().Get("continue")
		if cont != "" && cont == gone {
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"error":{"code":410,"reason":"Gone","message":"query parameter continue: compacted"}}`)
			return
		}
		n := 0
		if cont != "" {
			fmt.Sscanf(cont, "p%d", &n)
		}
		var items []string
		for _, m := range pages[n] {
			items = append(items, fmt.Sprintf(`{"time":"2026-11-22T10:00:00Z","type":"Normal","reason":"R","message":%q,"count":2,"firstTime":"2026-11-22T09:00:00Z","lastTime":"2026-11-22T10:00:00Z"}`, m))
		}
		next := ""
		if n+1 < len(pages) {
			next = fmt.Sprintf(`,"continue":"p%d"`, n+1)
		}
		fmt.Fprintf(w, `{"kind":"EventList","resourceVersion":"7"%s,"items":[%s]}`, next, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c, &queries
}

func TestEventsFollowsPages(t *testing.T) {
	tests := []struct {
		name        string
		pages       [][]string
		gone        string
		want        string
		wantQueries []string
		wantStatus  int
	}{
		{name: "one page", pages: [][]string{{"a", "b"}}, want: "[a b]",
			wantQueries: []string{"limit=1000&namespace=ns"}},
		{name: "three pages", pages: [][]string{{"a", "b"}, {"c"}, {"d"}}, want: "[a b c d]",
			wantQueries: []string{"limit=1000&namespace=ns", "continue=p1&limit=1000&namespace=ns", "continue=p2&limit=1000&namespace=ns"}},
		{name: "revision compacted between pages", pages: [][]string{{"a"}, {"b"}}, gone: "p1", wantStatus: http.StatusGone,
			wantQueries: []string{"limit=1000&namespace=ns", "continue=p1&limit=1000&namespace=ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, queries := pagedEvents(t, tt.pages, tt.gone)
			evs, err := c.Events(context.Background(), v4.EventFilter{Namespace: "ns"})
			if tt.wantStatus != 0 {
				if StatusOf(err) != tt.wantStatus {
					t.Fatalf("err %v, want status %d", err, tt.wantStatus)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				var msgs []string
				for _, e := range evs {
					msgs = append(msgs, e.Message)
					if e.Count != 2 || e.FirstTime.Hour() != 9 || e.LastTime.Hour() != 10 {
						t.Errorf("merged fields lost: %+v", e)
					}
				}
				if fmt.Sprint(msgs) != tt.want {
					t.Errorf("events %v, want %s", msgs, tt.want)
				}
			}
			if fmt.Sprint(*queries) != fmt.Sprint(tt.wantQueries) {
				t.Errorf("queries %q, want %q", *queries, tt.wantQueries)
			}
		})
	}
}

func TestEventsPage(t *testing.T) {
	c, queries := pagedEvents(t, [][]string{{"a"}, {"b"}}, "")
	p, err := c.EventsPage(context.Background(), v4.EventFilter{Kind: v4.KindNode, Name: "n1"}, 1, "p0")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Continue != "p1" || p.ResourceVersion != "7" {
		t.Errorf("page %+v", p)
	}
	if want := "continue=p0&kind=node&limit=1&name=n1"; (*queries)[0] != want {
		t.Errorf("query %s, want %s", (*queries)[0], want)
	}
}
