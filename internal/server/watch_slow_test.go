package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// TestSlowWatcherIsCutOff: a watch client that stops reading while 16 MB of changes go by
// is sent a final ERROR line (410, with the resourceVersion to resume from) and
// disconnected, instead of the server holding every change for it; a client that reads
// at the same time gets every change and no error.
func TestSlowWatcherIsCutOff(t *testing.T) {
	const writes, size = 160, 100 << 10
	// 32 changes of 100 KB: far below the 160 the slow client misses, and room enough for
	// the reading client to decrypt TLS on a busy machine.
	base := newTestServer(t, Config{WatchLimit: store.WatchLimit{Events: 32}})
	ns := "slow-watch"
	coll := base + "/v1/namespaces/" + ns + "/configmaps?watch=true"
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	// A fixed receive window, set before connecting so the window scale is negotiated
	// for it (autotuning could take all 16 MB), that still lets the client read fast once
	// it does.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		return errors.Join(err, serr)
	}}
	raw, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	slow := tls.Client(raw, &tls.Config{RootCAs: testCA(t).Pool(), ServerName: u.Hostname()})
	defer slow.Close()
	fmt.Fprintf(slow, "GET /v1/namespaces/%s/configmaps?watch=true HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", ns, u.Host, adminToken)
	reading := openStream(t, coll)

	// The reading client reads all along: every change, and never an error.
	readErr := make(chan error, 1)
	go func() {
		timeout := time.After(60 * time.Second)
		for n := 0; n < writes; n++ {
			select {
			case b, ok := <-reading:
				if !ok || strings.Contains(string(b), `"ERROR"`) {
					readErr <- fmt.Errorf("the reading client's stream ended after %d changes: %.300s", n, b)
					return
				}
			case <-timeout:
				readErr <- fmt.Errorf("the reading client got %d of %d changes", n, writes)
				return
			}
		}
		readErr <- nil
	}()
	// Eight writers, so the changes pass within seconds: the slow client must still be
	// connected (httpapi.StreamWriteTimeout) when it reads at last.
	content := strings.Repeat("x", size)
	var wg sync.WaitGroup
	writeErr := make(chan error, writes)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < writes; i += 8 {
				cm := &v4.ConfigMap{
					TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindConfigMap},
					Metadata: v4.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns},
					Datas:    map[string]v4.ConfigMapData{"k": {Type: "file", Content: content}},
				}
				if err := testStore.Create(context.Background(), cm, store.Raw{}); err != nil {
					writeErr <- err
				}
			}
		})
	}
	wg.Wait()
	close(writeErr)
	for err := range writeErr {
		t.Fatal(err)
	}

	// Once the reading client has every change, the slow client's stream has seen them
	// all too (etcd's watch can lag the writes on a busy machine, and a change that comes
	// after the slow client started reading would not find it behind).
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	// The slow client reads at last: some changes, then the ERROR line, then the end.
	slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the slow stream broke after %d lines instead of ending: %v", len(lines), err)
	}
	if len(lines) == 0 || len(lines) > writes {
		t.Fatalf("the slow client got %d lines, want fewer than %d and an ERROR", len(lines), writes)
	}
	var last v4.WatchErrorLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Type != string(store.Error) || last.Error == nil || last.Error.Code != http.StatusGone || last.ResourceVersion == "" ||
		!strings.Contains(last.Error.Message, "resourceVersion="+last.ResourceVersion) {
		t.Fatalf("last line %.300s, want an ERROR 410 naming the resourceVersion", lines[len(lines)-1])
	}
	var prev line
	if len(lines) > 1 {
		if err := json.Unmarshal([]byte(lines[len(lines)-2]), &prev); err != nil {
			t.Fatal(err)
		}
		if m := objectMeta(t, prev.Object); m.ResourceVersion != last.ResourceVersion {
			t.Fatalf("the ERROR names %s, the last change sent was at %s", last.ResourceVersion, m.ResourceVersion)
		}
	}
	// The metrics saw the cut-off, the changes sent, and the reading stream still open.
	waitUntilMetrics(t, base, `berth_watch_cut_offs_total{kind="configmap"} 1`, `berth_watch_streams{kind="configmap"} 1`)
	if m := string(call(t, http.MethodGet, base+"/metrics", "").body); !regexp.MustCompile(`berth_watch_events_sent_total\{kind="configmap"\} [1-9]`).MatchString(m) {
		t.Errorf("no changes counted as sent:\n%s", m)
	}
}

// waitUntilMetrics waits until the server's metrics have every line of want.
func waitUntilMetrics(t *testing.T, base string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		body := string(call(t, http.MethodGet, base+"/metrics", "").body)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %s", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFiltersPassTheEndOfAWatch: the one-object filter passes on the ERROR that ends a
// watch, so its clients learn why the stream ends (the agents' node watches come from the
// shared cache, which ends a watch with its own ERROR).
func TestFiltersPassTheEndOfAWatch(t *testing.T) {
	end := store.Event{Type: store.Error, Revision: 7, Err: &store.FellBehindError{Revision: 7}}
	filters := map[string]func(ctx context.Context, in <-chan store.Event) <-chan store.Event{
		"name": func(ctx context.Context, in <-chan store.Event) <-chan store.Event {
			return onlyMatching(ctx, in, func(o v4.Object) bool { return o.GetMeta().Name == "web" })
		},
	}
	for name, filter := range filters {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			in := make(chan store.Event, 1)
			in <- end
			close(in)
			out := filter(ctx, in)
			select {
			case ev := <-out:
				if ev.Type != store.Error || ev.Revision != 7 {
					t.Fatalf("got %+v, want the ERROR", ev)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the ERROR was not passed on")
			}
		})
	}
}
