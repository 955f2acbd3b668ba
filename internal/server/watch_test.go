package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

type line struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// openStream starts a streaming GET and returns its lines on a channel; the stream ends
// with the test.
func openStream(t *testing.T, url string) <-chan []byte {
	t.Helper()
	return openStreamAs(t, "", url)
}

// openStreamAs is openStream with who's client (httpClientAs: "" is the management
// token's, a node name its agent's).
func openStreamAs(t *testing.T, who, url string) <-chan []byte {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClientAs(t, who).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan []byte, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20) // lines of large objects
		for sc.Scan() {
			out <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return out
}

func nextLine(t *testing.T, ch <-chan []byte) line {
	t.Helper()
	select {
	case b, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("bad line %q: %v", b, err)
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	return line{}
}

func expectLines(t *testing.T, ch <-chan []byte, want ...[2]string) {
	t.Helper()
	for i, w := range want {
		l := nextLine(t, ch)
		if m := objectMeta(t, l.Object); l.Type != w[0] || m.Name != w[1] || m.ResourceVersion == "" {
			t.Fatalf("line %d: %s %s (rv %q), want %s %s", i, l.Type, m.Name, m.ResourceVersion, w[0], w[1])
		}
	}
}

func TestWatchStream(t *testing.T) {
	base := newTestServer(t, Config{})
	ns := "watching"
	coll := base + "/v1/namespaces/" + ns + "/configmaps"
	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "pre", "eA==")), http.StatusCreated)

	w := openStream(t, coll+"?watch=true")
	all := openStream(t, base+"/v1/configmaps?watch=1")
	r := call(t, http.MethodPost, coll, cmJSON(ns, "cfg", "eA=="))
	wantStatus(t, r, http.StatusCreated)
	created := objectMeta(t, r.body).ResourceVersion
	wantStatus(t, call(t, http.MethodPut, coll+"/cfg", cmJSON(ns, "cfg", "eQ==")), http.StatusOK)
	wantStatus(t, call(t, http.MethodDelete, coll+"/cfg", ""), http.StatusOK)

	expectLines(t, w, [2]string{"ADDED", "pre"}, [2]string{"ADDED", "cfg"},
		[2]string{"MODIFIED", "cfg"}, [2]string{"DELETED", "cfg"})

	// Across namespaces: skip whatever other tests left, then the same changes.
	var seen []string
	for len(seen) < 3 {
		l := nextLine(t, all)
		if m := objectMeta(t, l.Object); m.Namespace == ns && m.Name == "cfg" {
			seen = append(seen, l.Type)
		}
	}
	if seen[0] != "ADDED" || seen[1] != "MODIFIED" || seen[2] != "DELETED" {
		t.Fatalf("all-namespace watch saw %v", seen)
	}

	// From a revision: the changes after it only.
	from := openStream(t, coll+"?watch=true&resourceVersion="+created)
	expectLines(t, from, [2]string{"MODIFIED", "cfg"}, [2]string{"DELETED", "cfg"})
}

func TestWatchCompacted(t *testing.T) {
	base := newTestServer(t, Config{})
	ns := "watch-gone"
	coll := base + "/v1/namespaces/" + ns + "/configmaps"
	r := call(t, http.MethodPost, coll, cmJSON(ns, "cfg", "eA=="))
	wantStatus(t, r, http.StatusCreated)
	old := objectMeta(t, r.body).ResourceVersion
	for _, c := range []string{"eQ==", "eg=="} {
		wantStatus(t, call(t, http.MethodPut, coll+"/cfg", cmJSON(ns, "cfg", c)), http.StatusOK)
	}
	ctx := context.Background()
	resp, err := testStore.Client().Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Client().Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	oldRev, _ := strconv.ParseInt(old, 10, 64)
	if oldRev >= resp.Header.Revision {
		t.Fatalf("nothing to compact: %d >= %d", oldRev, resp.Header.Revision)
	}
	wantStatus(t, call(t, http.MethodGet, coll+"?watch=true&resourceVersion="+old, ""), http.StatusGone)
}

// Task groups are watched from the shared cache: a namespace's watch lists its own in
// name order and then their changes; a watch from a revision the cache no longer holds
// is told to list again (410).
func TestWatchTaskGroupsFromTheCache(t *testing.T) {
	s, base := newTestServerOf(t, Config{})
	ns := "tg-watch"
	putTaskGroup(t, ns, "1.web."+ns+".c.1", "n1", nil)
	first := putTaskGroup(t, ns, "0.web."+ns+".c.1", "n1", nil)
	putTaskGroup(t, "tg-watch-other", "0.web.tg-watch-other.c.1", "n1", nil)
	cacheHolds(t, s, first)
	coll := base + "/v1/namespaces/" + ns + "/taskgroups"
	w := openStream(t, coll+"?watch=true")
	expectLines(t, w, [2]string{"ADDED", "0.web." + ns + ".c.1"}, [2]string{"ADDED", "1.web." + ns + ".c.1"})
	from := first.Metadata.ResourceVersion
	putTaskGroup(t, "tg-watch-other", "1.web.tg-watch-other.c.1", "n1", nil)
	putTaskGroup(t, ns, "0.web."+ns+".c.1", "n2", nil)
	expectLines(t, w, [2]string{"MODIFIED", "0.web." + ns + ".c.1"})
	if rv := objectMeta(t, nextLineOrNone(t, w)).ResourceVersion; rv != "" {
		t.Fatalf("a change of another namespace reached the watch (rv %s)", rv)
	}

	// From a revision: the changes after it, this namespace's only.
	resumed := openStream(t, coll+"?watch=true&resourceVersion="+from)
	expectLines(t, resumed, [2]string{"MODIFIED", "0.web." + ns + ".c.1"})
	if got := objectMeta(t, nextLineOrNone(t, resumed)).ResourceVersion; got != "" {
		t.Fatalf("a resumed watch got more than the changes after %s (rv %s)", from, got)
	}

	// From before the cache's history: 410, list again.
	wantStatus(t, call(t, http.MethodGet, coll+"?watch=true&resourceVersion=1", ""), http.StatusGone)
}

// nextLineOrNone is the next line's object within 300 ms, or nil.
func nextLineOrNone(t *testing.T, ch <-chan []byte) json.RawMessage {
	t.Helper()
	select {
	case b := <-ch:
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("bad line %q: %v", b, err)
		}
		return l.Object
	case <-time.After(300 * time.Millisecond):
		return json.RawMessage(`{}`)
	}
}
