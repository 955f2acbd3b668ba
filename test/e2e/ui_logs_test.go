package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// uiTalker is a process of ns that writes "out N" to its stdout and "err N" to its stderr.
func uiTalker(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sh","startGracePeriod":1,
		"startCmd":"i=0; while :; do i=$((i+1)); echo \"out $i\"; echo \"err $i\" >&2; sleep 0.2; done",
		"resources":{"requests":{"cpu":"0.1","memory":"16"},"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`, name, ns)
}

// checkLogsPage opens the logs of ns/name's instance (a uiTalker): both streams show, the
// stream picker's stderr shows the err lines alone, a search keeps the lines that hold it
// (case-insensitive) and counts them, and Download saves the whole log of the stream as
// <taskgroup>-<task>-<stream>.log, read back from its Blob.
func checkLogsPage(t *testing.T, s *devServer, b *browser, ns, name string) {
	t.Helper()
	b.do("open "+name, 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/processes/"+ns+"/"+name), chromedp.WaitVisible(chromedp.CSS("#instances")))
	link := `#instances tr[data-key] a[href^="#/logs/"]`
	b.waitJS("the instance's logs link", `document.querySelector('`+link+`') !== null`, 30*time.Second)
	b.click(link)
	b.do("open the logs", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#log")))
	log := `(document.getElementById('log') || {textContent: ''}).textContent` // the page is drawn again on a change
	b.waitJS("both streams", `/out \d+\n/.test(`+log+`) && /err \d+\n/.test(`+log+`)`, 30*time.Second)

	// stderr alone: a fetch of that stream.
	b.eval(`(() => { const s = document.getElementById('stream'); s.value = 'stderr'; s.dispatchEvent(new Event('change')); return 'picked'; })()`)
	b.waitJS("stderr in the URL", `location.hash.includes('stream=stderr')`, 10*time.Second)
	b.waitJS("stderr's lines", `(document.getElementById('stream') || {}).value === 'stderr' && /err 2\n/.test(`+log+`)`, 30*time.Second)
	if got := b.eval(log); strings.Contains(got, "out ") {
		t.Errorf("stderr shows stdout's lines:\n%.300s", got)
	}
	b.screenshot("logs-stderr")

	// A search narrows the lines to those that hold it, and counts them.
	b.eval(`(() => { const i = document.getElementById('log-search'); i.value = 'ERR 1'; i.dispatchEvent(new Event('input')); return 'typed'; })()`)
	b.waitJS("the lines that match", `(() => {
		const lines = `+log+`.split('\n').filter(Boolean);
		const n = Number((document.getElementById('log-matches') || {textContent: ''}).textContent.split(' ')[0]);
		return lines.length > 0 && lines.every((l) => l.includes('err 1')) && n === lines.length;
	})()`, 10*time.Second)

	// Download: the whole stderr, named after the task group, task and stream.
	b.eval(`(() => {
		window.savedLog = null;
		const create = URL.createObjectURL.bind(URL);
		URL.createObjectURL = (blob) => { blob.text().then((text) => { window.savedLog = text; }); return create(blob); };
		HTMLAnchorElement.prototype.click = function () { window.savedName = this.download; };
		document.getElementById('log-download').click();
		return 'clicked';
	})()`)
	b.waitJS("the download", `typeof window.savedLog === 'string'`, 30*time.Second)
	saved := b.eval(`window.savedLog`)
	if !strings.HasPrefix(saved, "err 1\nerr 2\n") || strings.Contains(saved, "out ") {
		t.Errorf("the downloaded log:\n%.300s", saved)
	}
	tg := b.eval(`decodeURIComponent(location.hash.split('?')[0].split('/').pop())`)
	if got, want := b.eval(`window.savedName`), tg+"-sh-stderr.log"; got != want {
		t.Errorf("the download's name %q, want %q", got, want)
	}
}
