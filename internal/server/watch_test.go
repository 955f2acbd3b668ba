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
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClientAs(t, "").Do(req)
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
