package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	v4 "github.com/berthhq/berth/api/v4"
)

// uiWorkflowStub answers, in the page, the workflow routes of uibatch/fake (the object,
// its nodes a page at a time, its stored artifacts) with a DAG whose loop has 300 items:
// the graph is drawn from known statuses whatever the server's workflow controller
// does. window.berthStub.evalPhase changes the eval node's phase between reads.
const uiWorkflowStub = `(() => {
  const real = window.fetch;
  window.berthStub = { evalPhase: 'Pending', reads: 0 };
  const base = '/v1/namespaces/uibatch/workflows/fake';
  const wf = { apiVersion: 'v4', kind: 'workflow', metadata: { name: 'fake', namespace: 'uibatch' },
    spec: { entrypoint: 'main', templates: [{ name: 'main', dag: { tasks: [
      { name: 'prepare', template: 'run' }, { name: 'train', template: 'run', dependencies: ['prepare'] },
      { name: 'eval', template: 'run', depends: 'train.Succeeded' }] } }, { name: 'run', process: { procName: 'x', startCmd: 'true' } }] },
    status: { phase: 'Running', startedAt: new Date(Date.now() - 60000).toISOString() } };
  const nodes = () => {
    const at = new Date(Date.now() - 50000).toISOString();
    const n = [
      { id: 'r', name: 'fake', displayName: 'fake', type: 'DAG', templateName: 'main', phase: 'Running', children: ['p', 't', 'e'] },
      { id: 'p', name: 'fake.prepare', displayName: 'prepare', type: 'Pod', phase: 'Succeeded', startedAt: at, finishedAt: at, boundaryID: 'r',
        outputs: { parameters: [{ name: 'rows', value: '42' }], artifacts: [{ name: 'data', path: '/out' }], exitCode: 0 } },
      { id: 't', name: 'fake.train', displayName: 'train', type: 'TaskGroup', phase: 'Running', boundaryID: 'r', children: [] },
      { id: 'e', name: 'fake.eval', displayName: 'eval', type: 'Pod', phase: window.berthStub.evalPhase, boundaryID: 'r' },
    ];
    for (let i = 0; i < 300; i++) {
      n.push({ id: 'i' + i, name: 'fake.train(' + i + ')', displayName: 'train(' + i + ')', type: 'Pod', boundaryID: 'r',
        phase: i === 7 ? 'Failed' : i >= 295 ? 'Running' : 'Succeeded', message: i === 7 ? 'exit code 3' : '' });
      n[2].children.push('i' + i);
    }
    return n;
  };
  const json = (v) => Promise.resolve(new Response(JSON.stringify(v), { headers: { 'Content-Type': 'application/json' } }));
  window.fetch = (path, init) => {
    const p = String(path);
    if (!p.startsWith(base)) return real(path, init);
    if (p === base) { window.berthStub.reads++; return json(wf); }
    if (p.startsWith(base + '/nodes')) {
      const from = Number(new URL(p, location.href).searchParams.get('continue') || 0);
      const all = nodes();
      const page = { items: all.slice(from, from + 200) };
      if (from + 200 < all.length) page.continue = String(from + 200);
      return json(page);
    }
    if (p === base + '/artifacts/p/main-logs') return Promise.resolve(new Response('prepared 42 rows\n', { headers: { 'Content-Type': 'text/plain' } }));
    return Promise.resolve(new Response('{"error":{"message":"no such artifact"}}', { status: 404, headers: { 'Content-Type': 'application/json' } }));
  };
  return 'stubbed';
})()`

// dagChecks is the expression of what is wrong with the drawn graph: boxes that
// overlap, edges that do not point down (empty when none).
const dagChecks = `(() => {
  const boxes = [...document.querySelectorAll('#dag .node')].map((g) => {
    const m = g.getAttribute('transform').match(/translate\(([-\d.]+),([-\d.]+)\)/);
    const r = g.querySelector('rect');
    return { id: g.dataset.id, x: +m[1], y: +m[2], w: +r.getAttribute('width'), h: +r.getAttribute('height') };
  });
  const bad = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) bad.push('overlap ' + a.id + ' ' + b.id);
  }
  for (const e of document.querySelectorAll('#dag .edge')) {
    const n = e.getAttribute('d').match(/[-\d.]+/g).map(Number);
    if (!(n[1] < n[n.length - 1])) bad.push('edge up ' + e.dataset.from + '>' + e.dataset.to);
  }
  return bad.join('; ');
})()`

// checkBatchPages opens the batch pages of namespace ns: a job listed live and its page
// with its run's history once Complete, then suspended by the CLI (whose job logs print
// its output); a workflow listed live (and by the CLI); and the workflow page's
// graph of a 300-item loop (stubbed statuses): collapsed with a notice, no overlap, edges
// down, colours by phase that follow a change without a redraw, a click that shows a
// node's outputs, artifact and stored log, and every item drawn on request.
func checkBatchPages(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	// A finished workflow's task groups stay until it is deleted: every kind is deleted
	// before the namespace's task groups are waited for.
	s.cleanupAllOwners(ns, 60*time.Second, "cronjobs", "jobs", "workflows")
	b.do("jobs", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/jobs?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#jobs-table")))
	b.waitJS("the jobs list", `document.getElementById('main').dataset.painted === 'jobs'`, 30*time.Second)
	s.applySpec(t, fmt.Sprintf(`{"apiVersion":"v4","kind":"job","metadata":{"name":"once","namespace":%q},"killPolicy":{"gracePeriod":1},
		"spec":{"template":{"spec":{"processes":[{"procName":"work","startCmd":"echo done","startGracePeriod":1,
		"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`, ns))
	row := fmt.Sprintf(`document.querySelector('#jobs tr[data-key=%s]')`, jsString(ns+"/once"))
	b.waitJS("the job listed live", row+` !== null`, 30*time.Second)
	b.waitJS("the job Complete, live", row+`.querySelector('.badge').dataset.phase === 'Complete'`, 90*time.Second)
	// A click event, not the anchor's click(): the logs page's check replaced that one in
	// this page to catch its download.
	b.eval(`(document.querySelector('#jobs tr[data-key="` + ns + `/once"] a').dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true })), 'clicked')`)
	b.waitJS("the job's page", `location.hash.startsWith('#/job/') && document.getElementById('job-history') !== null`, 10*time.Second)
	b.waitJS("the job's history", `document.querySelectorAll('#job-history tr').length === 1 && document.querySelector('#job-history .badge').dataset.phase === 'Succeeded'`, 30*time.Second)
	b.waitJS("its Suspend control", `document.getElementById('job-suspend').textContent === 'Suspend'`, 30*time.Second)
	b.screenshot("job")
	// The CLI on the same job: its run's output, and suspend shown live on its page.
	wantIn(t, "berth job logs", s.mustBerth("job", "logs", "once", "-n", ns), "done\n")
	wantIn(t, "berth job suspend", s.mustBerth("job", "suspend", "once", "-n", ns), "job/once suspended")
	b.waitJS("the job suspended, live", `document.getElementById('job-suspend').textContent === 'Resume'`, 30*time.Second)

	b.do("workflows", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/workflows?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#workflows-table")))
	s.applySpec(t, fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":"hello","namespace":%q},
		"spec":{"entrypoint":"main","templates":[{"name":"main","process":{"procName":"hello","startCmd":"echo hello"}}]}}`, ns))
	b.waitJS("the workflow listed live", fmt.Sprintf(`document.querySelector('#workflows tr[data-key=%s]') !== null`, jsString(ns+"/hello")), 30*time.Second)
	wantIn(t, "berth get wf", s.mustBerth("get", "wf", "-n", ns), "PHASE", "PROGRESS", "hello")
	wantIn(t, "berth workflow get -o json", s.mustBerth("workflow", "get", "hello", "-n", ns, "-o", "json"), `"name": "hello"`)
	checkRealWorkflowPage(t, s, b, ns)
	checkCronJobPage(t, s, b, ns)

	b.eval(uiWorkflowStub)
	b.eval(`(location.hash = '#/wf/uibatch/fake', 'moved')`)
	b.waitJS("the graph", `document.querySelectorAll('#dag .node').length === 25`, 30*time.Second)
	if bad := b.eval(dagChecks); bad != "" {
		t.Errorf("the graph: %s", bad)
	}
	if n := b.eval(`document.getElementById('wf-collapsed').textContent`); !strings.Contains(n, "train: 280 more children not drawn (280 Succeeded)") {
		t.Errorf("the collapsed loop's notice: %q", n)
	}
	for id, phase := range map[string]string{"p": "Succeeded", "i7": "Failed", "i299": "Running", "e": "Pending"} {
		if got := b.eval(fmt.Sprintf(`document.querySelector('#dag .node[data-id=%q]').dataset.phase`, id)); got != phase {
			t.Errorf("node %s drawn %s, want %s", id, got, phase)
		}
	}
	fill := func(id string) string {
		return b.eval(fmt.Sprintf(`getComputedStyle(document.querySelector('#dag .node[data-id=%q] rect')).fill`, id))
	}
	if fill("p") == fill("i7") || fill("p") == fill("e") {
		t.Errorf("phases share a colour: Succeeded %s, Failed %s, Pending %s", fill("p"), fill("i7"), fill("e"))
	}
	if got := b.eval(`document.getElementById('wf-progress').textContent`); got != "296/302" {
		t.Errorf("progress %q, want 296/302", got)
	}
	b.screenshot("workflow")

	b.eval(`(document.getElementById('dag').dataset.mark = 'before', 'marked')`)
	b.eval(`(window.berthStub.evalPhase = 'Running', 'changed')`)
	b.waitJS("eval Running, live", `document.querySelector('#dag .node[data-id="e"]').dataset.phase === 'Running'`, 30*time.Second)
	if b.eval(`document.getElementById('dag').dataset.mark || ''`) != "before" {
		t.Error("a change of phase drew the whole graph again")
	}

	b.eval(`(document.querySelector('#dag .node[data-id="p"]').dispatchEvent(new MouseEvent('click')), 'clicked')`)
	b.waitJS("prepare's detail", `document.getElementById('node-detail').dataset.id === 'p' && document.getElementById('node-log').textContent === 'prepared 42 rows\n'`, 30*time.Second)
	detail := b.eval(`document.getElementById('node-detail').textContent`)
	wantIn(t, "prepare's detail", detail, "rows", "42", "output data")
	if b.eval(`String(document.querySelector('#node-artifacts button.download[data-artifact="data"]') !== null)`) != "true" {
		t.Error("no download of prepare's output artifact")
	}

	b.eval(`(document.querySelector('#wf-collapsed button.expand').click(), 'expanded')`)
	b.waitJS("every item drawn", `document.querySelectorAll('#dag .node').length === 304 && document.getElementById('wf-collapsed').textContent === ''`, 30*time.Second)
	if bad := b.eval(dagChecks); bad != "" {
		t.Errorf("the whole graph: %s", bad)
	}
}

func wantIn(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q: %s", what, w, got)
		}
	}
}

// checkRealWorkflowPage opens the page of workflow hello of ns once it has finished: one
// box per node the server has, each Succeeded, and a click shows the step's stored log.
func checkRealWorkflowPage(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	b.eval(`(location.hash = '#/wf/` + ns + `/hello', 'moved')`)
	b.waitJS("hello's graph, Succeeded", `document.querySelector('#dag .node') !== null && `+
		`[...document.querySelectorAll('#dag .node')].every((n) => n.dataset.phase === 'Succeeded')`, 90*time.Second)
	var wf v4.Workflow
	if err := json.Unmarshal([]byte(s.mustBerth("workflow", "get", "hello", "-n", ns, "-o", "json")), &wf); err != nil {
		t.Fatal(err)
	}
	if got := b.eval(`String(document.querySelectorAll('#dag .node').length)`); got != strconv.Itoa(len(wf.Status.Nodes)) {
		t.Errorf("%s boxes for the workflow's %d nodes", got, len(wf.Status.Nodes))
	}
	b.eval(`(document.querySelector('#dag .node').dispatchEvent(new MouseEvent('click')), 'clicked')`)
	b.waitJS("hello's stored log", `document.getElementById('node-log').textContent.includes('hello')`, 30*time.Second)
}

// checkCronJobPage triggers a suspended cronjob of ns by the CLI and waits for its page
// to show the run in its history (found by the berth.io/cronjob label) and its status.
func checkCronJobPage(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	s.applySpec(t, fmt.Sprintf(`{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"nightly","namespace":%q},
		"spec":{"schedule":"0 3 * * *","suspend":true,"jobTemplate":{"killPolicy":{"gracePeriod":1},"spec":{"template":{"spec":{
		"processes":[{"procName":"echo","startCmd":"exec echo nightly","startGracePeriod":1,"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}}}`, ns))
	b.eval(`(location.hash = '#/cronjob/` + ns + `/nightly', 'moved')`)
	b.waitJS("the cronjob's page", `document.getElementById('main').dataset.painted === 'cronjob'`, 30*time.Second)
	s.mustBerth("cronjob", "trigger", "nightly", "-n", ns)
	b.waitJS("the triggered run in the history", `document.querySelectorAll('#cronjob-history tr').length === 1 && `+
		`document.querySelector('#cronjob-history td:nth-child(4)').textContent === 'by hand'`, 30*time.Second)
	b.waitJS("the run Complete, no longer active", `document.querySelector('#cronjob-history .badge').dataset.phase === 'Complete' && `+
		`document.querySelector('#cronjob-history tr').dataset.active === 'false' && document.getElementById('cronjob-active').textContent === '0'`, 90*time.Second)
	if sum := b.eval(`document.getElementById('cronjob-summary').textContent`); strings.Contains(sum, "lastScheduleTime") || !strings.Contains(sum, "Last scheduled") {
		t.Errorf("the cronjob's summary: %s", sum)
	}
}
