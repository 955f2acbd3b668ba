package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

type eventPage struct {
	Kind            string     `json:"kind"`
	ResourceVersion string     `json:"resourceVersion"`
	Continue        string     `json:"continue"`
	Items           []v4.Event `json:"items"`
}

func getEventPage(t *testing.T, u string) (eventPage, response) {
	t.Helper()
	r := call(t, http.MethodGet, u, "")
	var p eventPage
	if r.code == http.StatusOK {
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
	}
	return p, r
}

func TestEventsRoutePaging(t *testing.T) {
	base := newTestServer(t, Config{})
	ctx := context.Background()
	w := openStream(t, base+"/v1/events?namespace=pg-a&watch=true")
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for i := range 12 {
		e := v4.Event{Time: start.Add(time.Duration(i) * time.Second), Reason: "Said", Kind: v4.KindProcess,
			Namespace: []string{"pg-a", "pg-b"}[i%2], Name: "web", Message: fmt.Sprint(i)}
		if err := testStore.RecordEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Three repeats of event 0 merge into it; it becomes the most recent.
	for i := range 3 {
		e := v4.Event{Time: start.Add(time.Minute + time.Duration(i)*time.Second), Reason: "Said", Kind: v4.KindProcess,
			Namespace: "pg-a", Name: "web", Message: "0"}
		if err := testStore.RecordEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	pages, cont := 0, ""
	for {
		u := base + "/v1/events?limit=5"
		if cont != "" {
			u += "&continue=" + url.QueryEscape(cont)
		}
		p, r := getEventPage(t, u)
		wantStatus(t, r, http.StatusOK)
		pages++
		if p.Kind != "EventList" || p.ResourceVersion == "" || len(p.Items) > 5 {
			t.Fatalf("page %d: %s", pages, r.body)
		}
		for _, e := range p.Items {
			got = append(got, fmt.Sprintf("%s/%d", e.Message, e.Occurrences()))
		}
		if p.Continue == "" {
			break
		}
		cont = p.Continue
	}
	want := "[1/1 2/1 3/1 4/1 5/1 6/1 7/1 8/1 9/1 10/1 11/1 0/4]"
	if fmt.Sprint(got) != want || pages != 3 {
		t.Fatalf("%d pages %v, want 3 pages %s", pages, got, want)
	}
	// Newest first, as the console shows them: the same records the other way round.
	got, pages, cont = nil, 0, ""
	for {
		p, r := getEventPage(t, base+"/v1/events?order=newest&limit=5&continue="+url.QueryEscape(cont))
		wantStatus(t, r, http.StatusOK)
		pages++
		for _, e := range p.Items {
			got = append(got, fmt.Sprintf("%s/%d", e.Message, e.Occurrences()))
		}
		if cont = p.Continue; cont == "" {
			break
		}
	}
	if want := "[0/4 11/1 10/1 9/1 8/1 7/1 6/1 5/1 4/1 3/1 2/1 1/1]"; fmt.Sprint(got) != want || pages != 3 {
		t.Fatalf("newest first: %d pages %v, want 3 pages %s", pages, got, want)
	}

	// The watch saw the six records of pg-a, then each merge of the repeat.
	var streamed []string
	for range 6 + 3 {
		select {
		case b := <-w:
			var e v4.Event
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			streamed = append(streamed, fmt.Sprintf("%s/%d", e.Message, e.Count))
		case <-time.After(10 * time.Second):
			t.Fatalf("watch: got only %v", streamed)
		}
	}
	if want := "[0/1 2/1 4/1 6/1 8/1 10/1 0/2 0/3 0/4]"; fmt.Sprint(streamed) != want {
		t.Fatalf("watch streamed %v, want %s", streamed, want)
	}

	first, _ := getEventPage(t, base+"/v1/events?namespace=pg-a&limit=2")
	if first.Continue == "" {
		t.Fatal("no continue on a partial page")
	}
	tests := []struct {
		name, query string
		code        int
		mention     string
	}{
		{"limit zero", "limit=0", http.StatusBadRequest, "limit"},
		{"limit negative", "limit=-3", http.StatusBadRequest, "limit"},
		{"limit over the maximum", "limit=5001", http.StatusBadRequest, "limit"},
		{"limit not a number", "limit=ten", http.StatusBadRequest, "limit"},
		{"continue garbage", "continue=xyz", http.StatusBadRequest, "continue"},
		{"maximum limit", "limit=5000", http.StatusOK, ""},
		{"order unknown", "order=random", http.StatusBadRequest, "order"},
		{"order newest", "order=newest&namespace=pg-a", http.StatusOK, ""},
		{"a token of the other order", "order=newest&namespace=pg-a&continue=" + url.QueryEscape(first.Continue), http.StatusBadRequest, "continue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := getEventPage(t, base+"/v1/events?"+tt.query)
			wantStatus(t, r, tt.code)
			if !strings.Contains(string(r.body), tt.mention) {
				t.Errorf("%s does not name %q", r.body, tt.mention)
			}
		})
	}

	// A token limited to pg-a reads its namespace newest first, and no other.
	tenant := tokenWithPolicy(t, base, `kind: acl-policy
metadata: {name: pg-a-reader}
rules:
  - {namespaces: ["pg-a"], kinds: ["*"], verbs: [read]}
`, "pg-a-reader", "")
	wantStatus(t, callAs(t, "", http.MethodGet, base+"/v1/events?namespace=pg-a&order=newest&limit=2", "", tenant), http.StatusOK)
	wantStatus(t, callAs(t, "", http.MethodGet, base+"/v1/events?namespace=pg-b&order=newest", "", tenant), http.StatusForbidden)
	wantStatus(t, callAs(t, "", http.MethodGet, base+"/v1/events?order=newest", "", tenant), http.StatusForbidden)

	// Once etcd compacted the list's revision, its continue token is gone.
	if err := testStore.RecordEvent(ctx, v4.Event{Reason: "Later", Namespace: "pg-a", Message: "later"}); err != nil {
		t.Fatal(err)
	}
	resp, err := testStore.Client().Get(ctx, "compact")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Client().Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	_, r := getEventPage(t, base+"/v1/events?namespace=pg-a&limit=2&continue="+url.QueryEscape(first.Continue))
	wantStatus(t, r, http.StatusGone)
	if !strings.Contains(string(r.body), "continue") {
		t.Errorf("410 %s does not name continue", r.body)
	}
}
