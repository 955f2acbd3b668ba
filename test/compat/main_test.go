// Package compat is the conformance suite of berth's other front doors (docs/compat.md):
// BCS's scheduler API and Lain deployd's API, driven with the requests their clients
// send (reconstructed from BCS's and deployd's sources and documentation, in testdata)
// against the real berth binary, `berth dev` with its agent, over HTTPS with a token.
package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/test/berthtest"
)

var berthBin string

func TestMain(m *testing.M) { berthtest.Main(m, &berthBin, "berth-compat-bin") }

// berth is one running `berth dev`.
type berth struct {
	url  string
	http *http.Client
	logs *bytes.Buffer
	// dataDir holds the CA (ca.crt) and the management token (admin-token).
	dataDir string
}

// startBerth runs `berth dev` (server and agent) in a temporary data directory on a free
// loopback port and waits until it is ready.
func startBerth(t *testing.T, flags ...string) *berth {
	t.Helper()
	dataDir := t.TempDir()
	// The agent runs processes as an unprivileged user, who must pass through to them.
	for p := filepath.Dir(dataDir); strings.HasPrefix(p, filepath.Clean(os.TempDir())+"/"); p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	addr := berthtest.FreeAddr(t)
	b := &berth{url: "https://" + addr, logs: &bytes.Buffer{}, dataDir: dataDir}
	cmd := exec.Command(berthBin, append([]string{"dev", "--listen", addr, "--data-dir", dataDir}, flags...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdout, cmd.Stderr = b.logs, b.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// Workloads outlive berth dev by design: stop them first, so that no process of
		// this test is left running on the machine.
		if b.http != nil {
			b.deleteWorkloads(t)
		}
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("berth dev output:\n%s", b.logs)
		}
	})
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("berth dev exited:\n%s", b.logs)
		default:
		}
		if b.http == nil {
			token, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
			roots, caErr := client.LoadCAFile(filepath.Join(dataDir, "ca.crt"))
			if err != nil || caErr != nil {
				continue
			}
			b.http = client.HTTPClient(roots, nil)
			b.http.Transport = &berthtest.Bearer{Token: strings.TrimSpace(string(token)), Next: b.http.Transport}
		}
		if resp, err := b.http.Get(b.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b
			}
		}
	}
	t.Fatalf("berth dev not ready in 60 s:\n%s", b.logs)
	return nil
}

// do sends one request and returns the status, the headers and the body.
func (b *berth) do(t *testing.T, method, path string, header http.Header, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// node waits for the agent of berth dev to register its node and returns its name.
func (b *berth) node(t *testing.T) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_, _, body := b.do(t, http.MethodGet, "/v1/nodes", nil, "")
		var nodes struct {
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"items"`
		}
		if json.Unmarshal(body, &nodes) == nil && len(nodes.Items) == 1 {
			return nodes.Items[0].Metadata.Name
		}
	}
	t.Fatalf("berth dev's node did not register in 30 s:\n%s", b.logs)
	return ""
}

// deleteWorkloads deletes every workload of berth dev and waits, up to a minute, until
// its task groups are gone (their tasks stopped).
func (b *berth) deleteWorkloads(t *testing.T) {
	t.Helper()
	c, err := client.New(b.url, client.WithHTTPClient(b.http))
	if err != nil {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, kind := range []v4.Kind{v4.KindDeployment, v4.KindDaemonset, v4.KindApplication, v4.KindProcess, v4.KindDependency} {
		list, err := c.List(ctx, kind, "")
		if err != nil {
			t.Errorf("list %s: %v", kind.Plural(), err)
			continue
		}
		for _, o := range list.Items {
			if _, err := c.Delete(ctx, kind, o.GetMeta().Namespace, o.GetMeta().Name); err != nil {
				t.Logf("delete %s %s/%s: %v", kind, o.GetMeta().Namespace, o.GetMeta().Name, err)
			}
		}
	}
	for ctx.Err() == nil {
		if list, err := c.List(ctx, v4.KindTaskGroup, ""); err == nil && len(list.Items) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Error("the test's task groups were not all gone a minute after their workloads were deleted")
}
