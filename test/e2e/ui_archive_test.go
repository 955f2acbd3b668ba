package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	v4 "github.com/berthhq/berth/api/v4"
)

// archiveNS is the namespace of the console's workflow archive test.
const archiveNS = "uiarch"

// hostileParam is a parameter's value the console must show as text, never as markup.
const hostileParam = `<img src=x onerror="window.berthPwned=1">`

// archivedEntry is the archive's answer for one workflow.
type archivedEntry struct {
	ArchivedAt time.Time   `json:"archivedAt"`
	Workflow   v4.Workflow `json:"workflow"`
}

// waitArchived waits until workflow name of archiveNS is in the archive and answers it.
func waitArchived(t *testing.T, s *devServer, name string) archivedEntry {
	t.Helper()
	var e archivedEntry
	waitUntil(t, 90*time.Second, name+" archived", func() bool {
		e = archivedEntry{}
		return s.apiGet("/v1/namespaces/"+archiveNS+"/archivedworkflows/"+name, &e) == nil && e.Workflow.Status.UID != ""
	})
	return e
}

// TestWebConsoleWorkflowArchive: with --workflow-archive-after 1s a failed workflow moves
// into the archive; its old link opens its archived page (the stored one answers 404),
// drawn from the archive's nodes with an "Archived" badge, a step's stored log and a
// hostile parameter shown as text; the workflows list has it under Archived (and says
// so when a namespace has none); Resubmit makes a new workflow, Retry stores it again
// (and, failed again, the page follows it back into the archive), Delete asks first.
func TestWebConsoleWorkflowArchive(t *testing.T) {
	requireRoot(t)
	s := startDev(t, t.TempDir(), "--workflow-archive-after", "1s")
	b := newBrowser(t, s)
	s.applySpec(t, fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":"flaky","namespace":%q},
		"spec":{"entrypoint":"main","templates":[{"name":"main","dag":{"tasks":[
		 {"name":"hello","template":"say","arguments":{"parameters":[{"name":"m","value":%q}]}},
		 {"name":"boom","template":"boom","dependencies":["hello"]}]}},
		 {"name":"say","inputs":{"parameters":[{"name":"m"}]},"process":{"procName":"say","startCmd":"echo archived-hello"}},
		 {"name":"boom","process":{"procName":"boom","startCmd":"exit 3"}}]}}`, archiveNS, hostileParam))
	e := waitArchived(t, s, "flaky")
	if e.Workflow.Status.Phase != v4.WfFailed || len(e.Workflow.Status.Nodes) < 3 {
		t.Fatalf("archived %s with %d nodes", e.Workflow.Status.Phase, len(e.Workflow.Status.Nodes))
	}
	if code, _ := s.do(t, http.MethodGet, s.url+"/v1/namespaces/"+archiveNS+"/workflows/flaky", ""); code != http.StatusNotFound {
		t.Fatalf("the archived workflow's object: %d, want 404", code)
	}

	b.do("open the console", 30*time.Second, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	b.do("sign in", 30*time.Second, chromedp.SendKeys(chromedp.CSS("#token"), s.token), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#workloads")))
	// An old link: the stored workflow is gone, its archived page opens instead.
	b.eval(`(location.hash = '#/wf/` + archiveNS + `/flaky', 'moved')`)
	checkArchivedPage(t, b, e)
	b.screenshot("workflow-archived")
	checkArchivedList(t, b, e)

	// Resubmit: a new workflow from its spec, its live page.
	b.click(`.wf-action[data-action="resubmit"]`)
	b.waitJS("the resubmitted workflow's page", `/^#\/wf\/uiarch\/flaky-[a-z]{5}$/.test(location.hash)`, 30*time.Second)
	if code, _ := s.do(t, http.MethodGet, s.url+"/v1/namespaces/"+archiveNS+"/workflows/"+strings.TrimPrefix(b.eval(`location.hash`), "#/wf/uiarch/"), ""); code != http.StatusOK {
		t.Errorf("the resubmitted workflow: %d", code)
	}
	checkArchivedRetry(t, s, b, e)
	checkArchivedDelete(t, s, b)
}

// checkArchivedPage waits for the archived page of e (the browser on its way there) and
// checks its graph, badge, actions, and a step's panel with its stored log.
func checkArchivedPage(t *testing.T, b *browser, e archivedEntry) {
	t.Helper()
	b.waitJS("the archived page", `location.hash.includes('archived=1') && document.getElementById('wf-archived') !== null && `+
		`document.querySelectorAll('#dag .node').length > 0 && document.getElementById('main').dataset.rights === 'known'`, 30*time.Second)
	if got := b.eval(`location.hash`); !strings.Contains(got, "uid="+e.Workflow.Status.UID) {
		t.Errorf("the archived page's route %q lacks uid %s", got, e.Workflow.Status.UID)
	}
	if got := b.eval(`String(document.querySelectorAll('#dag .node').length)`); got != strconv.Itoa(len(e.Workflow.Status.Nodes)) {
		t.Errorf("%s boxes for the archived workflow's %d nodes", got, len(e.Workflow.Status.Nodes))
	}
	if got := b.eval(`document.getElementById('wf-archived').textContent`); !strings.HasPrefix(got, "Archived ") || !strings.HasSuffix(got, " ago") {
		t.Errorf("the archived badge: %q", got)
	}
	if got := b.eval(`document.querySelector('#wf-summary .badge').dataset.phase`); got != "Failed" {
		t.Errorf("the archived workflow's phase: %q", got)
	}
	shown := `[...document.querySelectorAll('.wf-action')].filter((b) => !b.hidden).map((b) => b.dataset.action).join(',')`
	if got := b.eval(shown); got != "retry,resubmit,delete" {
		t.Errorf("the archived page's actions: %q, want retry,resubmit,delete", got)
	}
	var hello string
	for id, n := range e.Workflow.Status.Nodes {
		if n.DisplayName == "hello" {
			hello = id
		}
	}
	if hello == "" {
		t.Fatalf("no node hello among %d", len(e.Workflow.Status.Nodes))
	}
	b.eval(fmt.Sprintf(`(document.querySelector('#dag .node[data-id=%s]').dispatchEvent(new MouseEvent('click')), 'clicked')`, jsString(hello)))
	b.waitJS("hello's stored log", `document.getElementById('node-log').textContent.includes('archived-hello')`, 30*time.Second)
	wantIn(t, "hello's panel", b.eval(`document.getElementById('node-detail').textContent`), hostileParam, "Inputs")
	if got := b.eval(`String(document.querySelector('#node-detail img, #main img') === null && window.berthPwned === undefined)`); got != "true" {
		t.Error("a parameter's value went into the page as markup")
	}
	if got := b.eval(`String(document.querySelector('#node-detail a[href^="#/taskgroup/"]') === null)`); got != "true" {
		t.Error("an archived step links to its task group, which is gone")
	}
}

// checkArchivedList opens the workflows of archiveNS: e under Archived, its row opening
// its page again; and a namespace with none says so.
func checkArchivedList(t *testing.T, b *browser, e archivedEntry) {
	t.Helper()
	b.eval(`(location.hash = '#/workflows?ns=uiempty', 'moved')`)
	b.waitJS("an empty archive", `(document.getElementById('archived-section') || {dataset: {}}).dataset.painted === 'true'`, 30*time.Second)
	if got := b.eval(`document.getElementById('archived').textContent`); got != "No archived workflows in uiempty." {
		t.Errorf("the empty archive says %q", got)
	}
	b.eval(`(location.hash = '#/workflows?ns=` + archiveNS + `', 'moved')`)
	row := fmt.Sprintf(`document.querySelector('#archived tr[data-key=%s]')`, jsString("flaky/"+e.Workflow.Status.UID))
	b.waitJS("flaky under Archived", row+` !== null`, 30*time.Second)
	if got := b.eval(row + `.querySelector('.badge').dataset.phase`); got != "Failed" {
		t.Errorf("the archived row's phase: %q", got)
	}
	if got := b.eval(`String(document.querySelector('#workflows tr[data-key="uiarch/flaky"]') === null)`); got != "true" {
		t.Error("the archived workflow is listed among the stored ones")
	}
	b.screenshot("workflows-archived")
	b.eval(`(` + row + `.querySelector('a').click(), 'clicked')`)
	checkArchivedPage(t, b, e)
}

// checkArchivedRetry retries e from its archived page: it is stored again and its live
// page opens; failing again, it is archived again and the page follows it there.
func checkArchivedRetry(t *testing.T, s *devServer, b *browser, e archivedEntry) {
	t.Helper()
	b.eval(`(location.hash = '#/wf/uiarch/flaky?archived=1&uid=` + e.Workflow.Status.UID + `', 'moved')`)
	b.waitJS("the archived page", `document.getElementById('wf-archived') !== null && document.getElementById('main').dataset.rights === 'known'`, 30*time.Second)
	b.click(`.wf-action[data-action="retry"]`)
	b.waitJS("the retried workflow's live page", `location.hash === '#/wf/uiarch/flaky'`, 30*time.Second)
	again := waitArchived(t, s, "flaky")
	if again.Workflow.Status.RetryCount != 1 || again.Workflow.Status.UID != e.Workflow.Status.UID {
		t.Errorf("archived again: retryCount %d, uid %s (was %s)", again.Workflow.Status.RetryCount, again.Workflow.Status.UID, e.Workflow.Status.UID)
	}
	b.waitJS("the live page follows it into the archive", `location.hash.includes('archived=1') && document.getElementById('wf-archived') !== null`, 30*time.Second)
}

// checkArchivedDelete deletes flaky from its archived page: not when the question is
// declined, then gone from the archive, and the list opens.
func checkArchivedDelete(t *testing.T, s *devServer, b *browser) {
	t.Helper()
	b.waitJS("Delete shown", `document.querySelector('.wf-action[data-action="delete"]').hidden === false`, 30*time.Second)
	path := s.url + "/v1/namespaces/" + archiveNS + "/archivedworkflows/flaky"
	b.eval(`(window.confirm = () => false, 'declines')`)
	b.click(`.wf-action[data-action="delete"]`)
	time.Sleep(time.Second)
	if code, _ := s.do(t, http.MethodGet, path, ""); code != http.StatusOK || !strings.Contains(b.eval(`location.hash`), "archived=1") {
		t.Fatalf("a declined delete: the entry %d, the page %s", code, b.eval(`location.hash`))
	}
	b.eval(`(window.confirm = () => true, 'accepts')`)
	b.click(`.wf-action[data-action="delete"]`)
	b.waitJS("the workflows list", `location.hash === '#/workflows?ns=uiarch'`, 30*time.Second)
	if code, _ := s.do(t, http.MethodGet, path, ""); code != http.StatusNotFound {
		t.Errorf("the deleted archived workflow: %d, want 404", code)
	}
}
