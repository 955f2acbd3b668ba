package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium driven through the DevTools protocol, trusting the
// server's certificate by its public key (--ignore-certificate-errors-spki-list): TLS
// stays on, and only that key is accepted besides the system's CAs.
type browser struct {
	t   testing.TB
	ctx context.Context
	// shots is where screenshots go ($BERTH_UI_SCREENSHOTS, else a temporary directory).
	shots string
	// failed are the page's requests that failed (not those it canceled), for the log of
	// a failing step.
	mu     sync.Mutex
	failed []string
}

// chromiumPath finds Debian's chromium; without one the UI tests skip, unless CI asks
// for them (BERTH_REQUIRE_CHROMIUM=1).
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-headless-shell", "/usr/lib/chromium/headless_shell", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BERTH_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("BERTH_REQUIRE_CHROMIUM=1 but no chromium is installed (apt-get install chromium)")
	}
	t.Skip("no chromium installed (apt-get install chromium)")
	return ""
}

// spkiOf is the base64 SHA-256 of the public key the server at url serves.
func (s *devServer) spkiOf(t testing.TB) string {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.url, "https://"), &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// newBrowser starts Chromium for the server s; it stops with the test.
func newBrowser(t testing.TB, s *devServer) *browser {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900),
		// This machine has no network: Chromium's own background connections only fail.
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("ignore-certificate-errors-spki-list", s.spkiOf(t)),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	shots := os.Getenv("BERTH_UI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, ctx: ctx, shots: shots}
	if err := chromedp.Listen(ctx, func(ev any) {
		if f, ok := ev.(*network.EventLoadingFailed); ok && !f.Canceled {
			b.mu.Lock()
			b.failed = append(b.failed, fmt.Sprintf("%s %s: %s", f.Type, f.RequestID, f.ErrorText))
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// do runs steps with a time limit, failing the test with a screenshot of where it stood.
func (b *browser) do(what string, limit time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot("failed-" + fileSafe(what))
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string]("document.body.innerText"))
		b.mu.Lock()
		failed := strings.Join(b.failed, "\n")
		b.mu.Unlock()
		b.t.Fatalf("%s: %v\npage text:\n%s\nfailed requests:\n%s", what, err, body, failed)
	}
}

// fileSafe makes what a step is called into a file name: a CSS selector holds slashes.
func fileSafe(what string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' {
			return r
		}
		return '-'
	}, what)
}

// waitJS waits until the expression is truthy. An expression that throws is not yet true:
// a page being rendered (a route change replaces its elements) may not hold what the
// expression reads for a moment, and a throw would end the poll at once. The last error
// thrown is named if the time runs out.
func (b *browser) waitJS(what, expr string, limit time.Duration) {
	b.t.Helper()
	tolerant := fmt.Sprintf(`(() => { try { return !!(%s); } catch (e) { window.berthWaitError = String(e); return false; } })()`, expr)
	b.eval(`(delete window.berthWaitError, 'reset')`)
	b.do(what, limit+5*time.Second, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](tolerant, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit))(ctx, t)
		if err != nil {
			if thrown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.berthWaitError || '')`)); thrown != "" {
				return fmt.Errorf("%w (the expression last threw %s)", err, thrown)
			}
		}
		return err
	}))
}

// click clicks the element sel once it exists, in one step of the page's own: rows of a
// live table may be replaced between chromedp's finding a node and clicking it.
func (b *browser) click(sel string) {
	b.t.Helper()
	q := fmt.Sprintf("document.querySelector(%q)", sel)
	b.waitJS("to click "+sel, q+" !== null", 30*time.Second)
	b.eval(fmt.Sprintf("(%s.click(), 'clicked')", q))
}

// typeInto focuses sel and types text as a keyboard does: one keyDown (with the key's
// text) and one keyUp per key, "\r" being Enter. (chromedp.SendKeys also sends a "char"
// event per key, which a terminal takes for a second key press.)
func (b *browser) typeInto(sel, text string) {
	b.t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Focus(chromedp.CSS(sel))}
	for _, r := range text {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: string(r), Text: string(r)}
		if r == '\r' {
			down.Key, down.Code, down.WindowsVirtualKeyCode = "Enter", "Enter", 13
		}
		up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: down.Key, Code: down.Code, WindowsVirtualKeyCode: down.WindowsVirtualKeyCode}
		steps = append(steps, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
			return err
		}))
	}
	b.do("type into "+sel, 30*time.Second, steps...)
}

// eval evaluates a JavaScript expression.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshot saves the whole page as NAME.png in the screenshots directory.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	img, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // PNG
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}
