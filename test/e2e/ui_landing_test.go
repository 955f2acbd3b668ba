package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	v4 "github.com/berthhq/berth/api/v4"
)

// uiProcess is a process of ns that sleeps, asking for cpu cores.
func uiProcess(ns, name, cpu string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"exec sleep 3600",
		"resources":{"requests":{"cpu":%q,"memory":"16"},"limits":{"cpu":%q,"memory":"16"}}}]}}}}`, name, ns, cpu, cpu)
}

// TestWebConsoleLandsOnEveryKind: on a cluster that runs only processes, the page after
// sign-in lists them (every kind of workload, not only applications), the namespace is
// picked from those that exist, a process that fits nowhere reads as pending with the
// scheduler's reason rather than as broken, the tabs show only once signed in, and the
// cluster page gives etcd's small database its size in KiB or MiB, never "0 MiB". The
// running process's instance page and the services page are checked too
// (checkInstancePage, checkServicesPage), and so are the nodes page's measured usage, the
// spec as YAML, the config pages, the events page and the logs page (checkNodesPage,
// checkSpecYAML, checkConfigPages, checkEventsPage, checkLogsPage) and the batch pages
// (checkBatchPages): one cluster less.
func TestWebConsoleLandsOnEveryKind(t *testing.T) {
	requireRoot(t)
	s := startDev(t, t.TempDir())
	b := newBrowser(t, s)
	s.cleanupProcesses("uiproc")
	s.applySpec(t, uiSecret("uiproc"))
	s.applySpec(t, uiWorker("uiproc", "worker"))
	s.applySpec(t, uiPortless("uiproc"))
	for _, svc := range uiServices("uiproc") {
		s.applySpec(t, svc)
	}
	s.applySpec(t, uiProcess("uiproc", "huge", "512"))
	s.applySpec(t, uiTalker("uiproc", "talker"))
	s.running(t, "uiproc", "worker", 1)
	s.running(t, "uiproc", "talker", 1)

	b.do("open the console", 30*time.Second, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	if hidden := b.eval(`String(document.getElementById('nav').hidden)`); hidden != "true" {
		t.Errorf("the tabs show while signed out (nav hidden: %s)", hidden)
	}
	b.do("sign in", 30*time.Second, chromedp.SendKeys(chromedp.CSS("#token"), s.token), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#workloads")))
	if hidden := b.eval(`String(document.getElementById('nav').hidden)`); hidden != "false" {
		t.Errorf("the tabs are hidden once signed in (nav hidden: %s)", hidden)
	}
	row := func(name string) string {
		return fmt.Sprintf(`document.querySelector('#rows tr[data-kind="processes"][data-key="uiproc/%s"]')`, name)
	}
	b.waitJS("the processes on the landing page", row("worker")+` !== null && `+row("huge")+` !== null`, 30*time.Second)
	b.waitJS("worker Running", row("worker")+`.querySelector('.badge').textContent === 'Running'`, 30*time.Second)
	b.waitJS("huge pending with its reason", row("huge")+`.querySelector('.badge').textContent === 'Pending' && `+
		row("huge")+`.querySelector('.note').textContent.startsWith('waiting for a node: ')`, 30*time.Second)
	// The controller says why in status.pending (the console reads it, not the message).
	if p := s.processStatus("uiproc", "huge").Pending; p == nil || p.Reason != v4.PendingUnschedulable ||
		!strings.Contains(p.Message, "insufficient cpu") || p.Check != "resources" {
		t.Errorf("huge's status.pending: %+v, want Unschedulable with the scheduler's reason", p)
	}
	if note := b.eval(row("huge") + `.querySelector('.note').textContent`); !strings.Contains(note, "insufficient cpu") {
		t.Errorf("huge's note: %q, want the scheduler's reason", note)
	}
	if kind := b.eval(row("worker") + `.querySelector('.kind').textContent`); kind != "process" {
		t.Errorf("worker's kind column: %q", kind)
	}
	if empty := b.eval(`String(document.getElementById('rows').textContent.includes('No workloads here'))`); empty != "false" {
		t.Error(`the landing page says "No workloads here" beside its processes`)
	}
	// The namespace is a choice among those that exist.
	b.waitJS("the namespace picker", `[...document.querySelectorAll('#ns option')].some((o) => o.value === 'uiproc')`, 30*time.Second)
	if tag := b.eval(`document.getElementById('ns').tagName`); tag != "SELECT" {
		t.Errorf("the namespace is a %s, want a picker", tag)
	}
	b.screenshot("landing")
	b.eval(`(() => { const s = document.getElementById('ns'); s.value = 'uiproc'; s.dispatchEvent(new Event('change')); return 'picked'; })()`)
	b.waitJS("the namespace in the URL", `location.hash.includes('ns=uiproc')`, 10*time.Second)
	b.waitJS("the namespace's processes", row("worker")+` !== null`, 30*time.Second)

	// The pending process's own page.
	b.click(`#rows tr[data-key="uiproc/huge"] a`)
	b.waitJS("Pending, waiting for a node", `(document.getElementById('phase') || {textContent: ''}).textContent.startsWith('Pending — waiting for a node: ')`, 30*time.Second)
	if phase := b.eval(`document.getElementById('phase').textContent`); !strings.Contains(phase, "insufficient cpu") || strings.Contains(phase, "Abnormal") {
		t.Errorf("huge's phase line: %q", phase)
	}
	if b.eval(`String(document.getElementById('message') !== null)`) != "false" {
		t.Errorf("the message repeats the reason: %q", b.eval(`document.getElementById('message').textContent`))
	}
	b.waitJS("the scheduler's answer", `(document.getElementById('pending-reason') || {textContent: ''}).textContent.includes('insufficient cpu')`, 30*time.Second)
	b.screenshot("pending")

	// A running process has no empty Message row.
	b.do("open worker", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/processes/uiproc/worker"), chromedp.WaitVisible(chromedp.CSS("#instances")))
	b.waitJS("worker's summary", `document.getElementById('phase').textContent === 'Running'`, 30*time.Second)
	if rows := b.eval(`[...document.querySelectorAll('#summary dt')].map((d) => d.textContent).join(',')`); strings.Contains(rows, "Message") {
		t.Errorf("a running process's summary: %s", rows)
	}
	checkSpecYAML(t, b)
	checkInstancePage(t, s, b, "uiproc")
	checkServicesPage(t, s, b, "uiproc")
	checkNodesPage(t, s, b)
	checkConfigPages(t, s, b, "uiproc")
	checkEventsPage(t, s, b, "uiproc")
	checkLogsPage(t, s, b, "uiproc", "talker")
	checkBatchPages(t, s, b, "uibatch")

	b.do("cluster", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/cluster"), chromedp.WaitVisible(chromedp.CSS("#members")))
	size := b.eval(`document.querySelector('#members tbody tr td:nth-child(5)').textContent`)
	if !strings.HasSuffix(size, " KiB") && !strings.HasSuffix(size, " MiB") || strings.HasPrefix(size, "0 ") {
		t.Errorf("etcd's database size: %q", size)
	}
}
