package server

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// rawRequest opens a TLS connection to the server at url and sends the request line and
// headers of a POST whose body, of length n, is not sent; it returns the connection.
func rawRequest(t *testing.T, url, path, token string, n int) *tls.Conn {
	t.Helper()
	host := strings.TrimPrefix(url, "https://")
	c, err := tls.Dial("tcp", host, &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, auth, n)
	return c
}

// readStatus reads the status code of the answer on c within d.
func readStatus(t *testing.T, c net.Conn, d time.Duration) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %s: %v", d, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Without credentials, nothing makes the server read a body: /v1/apply, /v1/plan and the
// BCS and deployd front doors answer 401 from the headers, while the body is still
// unsent.
func TestNoBodyIsReadBeforeAuthentication(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, path := range []string{"/v1/apply", "/v1/plan", "/mesosdriver/v4/namespaces/ns/applications", "/api/v1/podgroups",
		"/v1/acl/can-i"} {
		c := rawRequest(t, url, path, "", 1<<20)
		if code := readStatus(t, c, 5*time.Second); code != http.StatusUnauthorized {
			t.Errorf("%s: %d before the body was sent, want 401", path, code)
		}
	}
}

// A body that trickles in is cut once it falls below the minimum rate after the grace
// period: 408, and the connection's slot is free again.
func TestSlowBodyIsCut(t *testing.T) {
	url := newTestServer(t, Config{bodyGrace: 500 * time.Millisecond})
	c := rawRequest(t, url, "/v1/apply", adminToken, 1<<20)
	start := time.Now()
	go func() {
		for range 20 {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	if code := readStatus(t, c, 10*time.Second); code != http.StatusRequestTimeout {
		t.Fatalf("slow body: %d, want 408", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cut after %s", d)
	}
}

// One source has a bounded share of requests in flight; members (agents) are not
// counted against it.
func TestSourceRequestLimit(t *testing.T) {
	url := newTestServer(t, Config{})
	var conns []*tls.Conn
	for range sourceRequests {
		conns = append(conns, rawRequest(t, url, "/v1/apply", adminToken, 1<<20)) // held reading their bodies
	}
	waitFor(t, "every held request to be counted", func() bool {
		r := call(t, http.MethodGet, url+"/v1/namespaces/ns/applications", "")
		return r.code == http.StatusTooManyRequests
	})
	r := call(t, http.MethodGet, url+"/v1/namespaces/ns/applications", "")
	if e := decodeError(t, r); !strings.Contains(e.Message, "too many requests in flight") {
		t.Fatalf("429: %s", r.body)
	}
	// An agent's call is the cluster's own.
	wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/nodes/n1/heartbeat", `{}`), http.StatusNotFound)
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "the source's share to be free again", func() bool {
		return call(t, http.MethodGet, url+"/v1/namespaces/ns/applications", "").code == http.StatusOK
	})
}

// An unpaged list is written object by object: the answer is the usual list document,
// in key order, and the whole of it.
func TestStreamedList(t *testing.T) {
	url := newTestServer(t, Config{})
	const n = 600 // more than one chunk of the store's reads
	for i := range n {
		wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/big/configmaps",
			fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"c%04d","namespace":"big"},"datas":{"k":{"type":"file","content":"eA=="}}}`, i)),
			http.StatusCreated)
	}
	r := call(t, http.MethodGet, url+"/v1/namespaces/big/configmaps", "")
	wantStatus(t, r, http.StatusOK)
	var list struct {
		Kind            string `json:"kind"`
		ResourceVersion string `json:"resourceVersion"`
		Items           []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatalf("not a list document: %v", err)
	}
	if list.Kind != "List" || list.ResourceVersion == "" || len(list.Items) != n {
		t.Fatalf("list: kind %q rv %q, %d items", list.Kind, list.ResourceVersion, len(list.Items))
	}
	for i, it := range list.Items {
		if want := fmt.Sprintf("c%04d", i); it.Metadata.Name != want {
			t.Fatalf("item %d is %s, want %s", i, it.Metadata.Name, want)
		}
	}
	r = call(t, http.MethodGet, url+"/v1/namespaces/empty/configmaps", "")
	if !strings.HasSuffix(strings.TrimSpace(string(r.body)), `"items":[]}`) {
		t.Fatalf("empty list: %s", r.body)
	}
}

// An HTTP/2 connection is bounded as the server announces it: at most h2Streams streams,
// h2StreamBuffer bytes a stream may send before the server reads them (Go's defaults
// are 250 and 1 MiB: a connection of 240 streams could make it hold 240 MiB), and an
// HPACK table of h2HeaderTable bytes for the client's headers (Go's default: 4 KiB).
func TestHTTP2ConnectionsAreBounded(t *testing.T) {
	srv, _ := newTestServerOf(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.httpServer(quietLogger())
	go hs.Serve(tls.NewListener(ln, srv.TLSConfig()))
	t.Cleanup(func() { hs.Close() })
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			continue
		}
		streams, _ := sf.Value(http2.SettingMaxConcurrentStreams)
		window, _ := sf.Value(http2.SettingInitialWindowSize)
		if streams != h2Streams || window != h2StreamBuffer {
			t.Fatalf("the server announces %d streams and a %d-byte window, want %d and %d", streams, window, h2Streams, h2StreamBuffer)
		}
		if table, ok := sf.Value(http2.SettingHeaderTableSize); !ok || table != h2HeaderTable {
			t.Fatalf("the server announces a header table of %d bytes (announced: %v), want %d", table, ok, h2HeaderTable)
		}
		return
	}
}
