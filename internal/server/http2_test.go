package server

import (
	"github.com/berthhq/berth/internal/httpapi"

	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBrowsersGetHTTP2: a client that offers HTTP/2 (a browser) gets it, and a watch
// stream works over it; the CLI's client offers HTTP/1.1 only and keeps it (exec
// hijacks its connections).
func TestBrowsersGetHTTP2(t *testing.T) {
	base := newTestServer(t, Config{})
	browser := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true,
	}}
	req, _ := http.NewRequest("GET", base+"/v1/namespaces/h2/configmaps?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("a browser's watch: %s %s", resp.Proto, resp.Status)
	}
	wantStatus(t, call(t, "POST", base+"/v1/namespaces/h2/configmaps", cmJSON("h2", "cfg", "eA==")), http.StatusCreated)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ADDED"`) {
		t.Fatalf("the watch over HTTP/2: %q %v", line, err)
	}

	plain, err := httpClientAs(t, "").Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	plain.Body.Close()
	if plain.ProtoMajor != 1 {
		t.Errorf("berth's client got %s", plain.Proto)
	}
}

// TestIdleWatchOverHTTP2Lives: a watch that waits longer than the write timeout after
// its last event still delivers the next (over HTTP/2 a write deadline left set resets
// the stream when it fires).
func TestIdleWatchOverHTTP2Lives(t *testing.T) {
	defer func(d time.Duration) { httpapi.StreamWriteTimeout = d }(httpapi.StreamWriteTimeout)
	httpapi.StreamWriteTimeout = 200 * time.Millisecond
	base := newTestServer(t, Config{})
	browser := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	req, _ := http.NewRequest("GET", base+"/v1/namespaces/h2idle/configmaps?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	for i, name := range []string{"a", "b"} {
		wantStatus(t, call(t, "POST", base+"/v1/namespaces/h2idle/configmaps", cmJSON("h2idle", name, "eA==")), http.StatusCreated)
		line, err := lines.ReadString('\n')
		if err != nil || !strings.Contains(line, `"name":"`+name+`"`) {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		time.Sleep(3 * httpapi.StreamWriteTimeout) // idle past the deadline
	}
}

// Headers that outgrow the HPACK tables (h2HeaderTable) still arrive whole over
// HTTP/2: the client's encoder evicts older fields or sends them literally, and
// the server's decoder follows it, request after request on the one connection.
func TestHTTP2HeadersBeyondTheTable(t *testing.T) {
	url := newTestServer(t, Config{})
	hc := h2Client(t, "")
	pad := strings.Repeat("x", 200)
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/namespaces/h2pad%d/configmaps", url, i), nil)
		for j := range 12 { // 12 fields of over 200 bytes: more than twice the table
			req.Header.Set(fmt.Sprintf("X-Pad-%d", j), fmt.Sprintf("%d-%d-%s", i, j, pad))
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s %s", i, resp.Proto, resp.Status)
		}
	}
}
