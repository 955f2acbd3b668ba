package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// jsString quotes s for a JavaScript expression.
func jsString(s string) string { return fmt.Sprintf("%q", s) }

// rowPhase is the expression of the phase badge of the workloads table's row key.
func rowPhase(key string) string {
	return fmt.Sprintf(`(document.querySelector('#rows tr[data-key=%s] .badge') || {}).textContent`, jsString(key))
}

// TestWebConsole drives the web console in a real Chromium against the real binary:
// sign in with a token, watch a workload reach Running without reloading, scale it, read
// an instance's logs, run a command in its terminal, see why an instance is pending, and
// look at the nodes and the cluster. Each page is saved as a screenshot.
func TestWebConsole(t *testing.T) {
	requireDocker(t)
	s := startDev(t, t.TempDir())
	b := newBrowser(t, s)
	s.cleanupApps("ui")

	// Sign in: the console starts at its sign-in page.
	b.do("open the console", 30*time.Second, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	b.screenshot("signin")
	b.do("sign in", 30*time.Second, chromedp.SendKeys(chromedp.CSS("#token"), s.token), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#workloads")))
	if who := b.eval(`document.getElementById('who').textContent`); !strings.Contains(who, "management") {
		t.Errorf("signed in as %q", who)
	}

	// A workload applied now appears and reaches Running on the open page (its watch).
	b.do("workloads of ui", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/workloads?ns=ui"), chromedp.WaitVisible(chromedp.CSS("#workloads")))
	b.waitJS("the first paint", `document.getElementById('main').dataset.painted === 'true'`, 10*time.Second)
	b.eval(`document.getElementById('workloads').dataset.mark = 'before'`)
	s.applySpec(t, appSpec{name: "web", ns: "ui", containers: []string{
		container("main", `i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 1; done`, ""),
	}}.json())
	b.waitJS("web to show up live", `document.querySelector('#rows tr[data-key="ui/web"]') !== null`, 30*time.Second)
	b.waitJS("web Running without a reload", rowPhase("ui/web")+` === 'Running'`, 90*time.Second)
	if count := b.eval(`document.getElementById('count').textContent`); count != "1 of 1" {
		t.Errorf("the count after a workload came live: %q, want 1 of 1", count)
	}
	if b.eval(`document.getElementById('workloads').dataset.mark || ''`) != "before" {
		t.Error("the workloads page was drawn again: the change did not come through its watch")
	}
	b.screenshot("workloads")

	// Scale it to 2 from its page.
	b.click(`#rows tr[data-key="ui/web"] a`)
	b.do("open web", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#scale-to")))
	b.do("scale to 2", 30*time.Second, chromedp.SetValue(chromedp.CSS("#scale-to"), "2"), chromedp.Click(chromedp.CSS("#scale")))
	b.waitJS("2 instances Running", `[...document.querySelectorAll('#instances tr .badge[data-phase="Running"]')].length === 2`, 90*time.Second)
	b.waitJS("the scale event", `document.getElementById('events').textContent.length > 0`, 30*time.Second)
	b.screenshot("workload")
	if spec := s.mustBerth("get", "application", "web", "-n", "ui", "-o", "json"); !strings.Contains(spec, `"instance": 2`) && !strings.Contains(spec, `"instance":2`) {
		t.Errorf("scaled application:\n%s", spec)
	}

	// A scale from elsewhere (the CLI) shows in the box, so that Scale does not undo it;
	// a number the user is typing is theirs until they send it or press Escape.
	s.mustBerth("scale", "application", "web", "3", "-n", "ui")
	b.waitJS("the box follows the CLI's scale", `document.getElementById('scale-to').value === '3' && document.getElementById('instance-count').textContent.endsWith('/3')`, 30*time.Second)
	b.eval(`(() => { const i = document.getElementById('scale-to'); i.focus(); i.value = ''; return 'emptied'; })()`)
	b.typeInto("#scale-to", "5")
	s.mustBerth("scale", "application", "web", "2", "-n", "ui")
	b.waitJS("the count follows the CLI", `document.getElementById('instance-count').textContent.endsWith('/2')`, 30*time.Second)
	if v := b.eval(`document.getElementById('scale-to').value`); v != "5" {
		t.Errorf("the box being edited was overwritten: %q, want the 5 typed", v)
	}
	b.eval(`(document.getElementById('scale-to').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' })), 'escaped')`)
	b.waitJS("Escape gives the box back to the workload", `document.getElementById('scale-to').value === '2'`, 10*time.Second)
	b.waitJS("2 instances Running again", `[...document.querySelectorAll('#instances tr .badge[data-phase="Running"]')].length === 2`, 90*time.Second)

	// Logs of instance 0, followed.
	b.click(`#instances tr[data-key^="0."] a[href^="#/logs/"]`)
	b.do("open the logs", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#log")))
	b.waitJS("log lines", `/tick \d+\ntick \d+/.test(document.getElementById('log').textContent)`, 30*time.Second)
	first := b.eval(`document.getElementById('log').textContent`)
	b.waitJS("more log lines as they come", fmt.Sprintf(`document.getElementById('log').textContent.length > %d`, len(first)), 30*time.Second)
	b.screenshot("logs")

	// A terminal in instance 0: type a command, read its output on the screen.
	b.do("back to web", 30*time.Second, chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.CSS("#instances")))
	b.click(`#instances tr[data-key^="0."] a[href^="#/exec/"]`)
	b.do("open exec", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#connect")), chromedp.Click(chromedp.CSS("#connect")))
	screen := `(() => { const b = window.berthTerminal.buffer.active; let s = ''; for (let i = 0; i < b.length; i++) s += b.getLine(i).translateToString(true) + '\n'; return s; })()`
	// Chromium drops its connections when another test's container appears on this machine
	// (ERR_NETWORK_CHANGED): a session cut that way is opened again, as a user would.
	for attempt := 1; ; attempt++ {
		b.waitJS("the terminal connected", `document.getElementById('exec-state').textContent === 'connected'`, 30*time.Second)
		b.typeInto(".xterm-helper-textarea", "echo hello-$((6*7))\r")
		b.waitJS("the command's output or a cut", screen+`.includes('hello-42') || document.getElementById('exec-state').textContent.startsWith('closed')`, 30*time.Second)
		if b.eval(screen+`.includes('hello-42') ? 'ok' : 'cut'`) == "ok" {
			break
		}
		if attempt == 3 {
			t.Fatalf("the terminal was cut %d times: %s", attempt, b.eval(`document.getElementById('exec-state').textContent`))
		}
		b.click("#connect")
	}
	b.screenshot("exec")
	b.typeInto(".xterm-helper-textarea", "exit 3\r")
	b.waitJS("the exit code", `document.getElementById('exec-state').textContent === 'exited with code 3'`, 30*time.Second)

	// An instance that fits nowhere: its page says why, in the scheduler's words.
	s.applySpec(t, appSpec{name: "huge", ns: "ui", containers: []string{
		container("main", "sleep 3600", `,"resources":{"requests":{"cpu":"512","memory":"32"}}`),
	}}.json())
	b.do("open huge", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/applications/ui/huge"), chromedp.WaitVisible(chromedp.CSS("#instances")))
	b.waitJS("the pending reason", `(document.getElementById('pending-reason') || {textContent: ''}).textContent.includes('insufficient cpu')`, 60*time.Second)
	b.waitJS("Pending, not Abnormal", `document.getElementById('phase').textContent.startsWith('Pending — waiting for a node: ')`, 30*time.Second)

	// A deployment's rollout controls: pause, then resume.
	s.cleanupDeployments("uidep") // its own namespace: the cleanup waits for every task group of it
	dep := strings.Replace(appSpec{name: "rolling", ns: "uidep", containers: []string{container("main", "sleep 3600", "")}}.json(),
		`"kind":"application"`, `"kind":"deployment"`, 1)
	dep = strings.Replace(dep, `"spec":{"instance":1,`, `"spec":{"instance":1,"strategy":{"type":"RollingUpdate","rollingupdate":{"maxUnavailable":1,"maxSurge":1}},`, 1)
	s.applySpec(t, dep)
	b.do("open the deployment", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/deployments/uidep/rolling"), chromedp.WaitVisible(chromedp.CSS("#pause")))
	b.waitJS("its instance Running", `document.querySelectorAll('#instances .badge[data-phase="Running"]').length === 1`, 60*time.Second)
	b.do("pause", 30*time.Second, chromedp.Click(chromedp.CSS("#pause")))
	b.waitJS("paused, live", `document.getElementById('summary').textContent.includes('(paused)')`, 30*time.Second)
	b.do("resume", 30*time.Second, chromedp.Click(chromedp.CSS("#resume")))
	b.waitJS("resumed, live", `!document.getElementById('summary').textContent.includes('(paused)')`, 30*time.Second)

	// Nodes with their usage, disabled and enabled again; and the cluster.
	b.do("nodes", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/nodes"), chromedp.WaitVisible(chromedp.CSS("#rows tr")))
	if tgs := b.eval(`document.querySelector('#rows tr td:nth-child(6)').textContent`); tgs != "3" {
		t.Errorf("the node's task groups: %q, want 3 (web's two, rolling's; huge is unplaced)", tgs)
	}
	b.screenshot("nodes")
	b.click("#rows tr .toggle")
	b.waitJS("the node disabled, live", `document.querySelector('#rows tr').textContent.includes('disabled')`, 30*time.Second)
	b.click("#rows tr .toggle")
	b.waitJS("the node enabled, live", `!document.querySelector('#rows tr').textContent.includes('disabled')`, 30*time.Second)
	b.do("cluster", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/cluster"), chromedp.WaitVisible(chromedp.CSS("#members")))
	if leader := b.eval(`document.getElementById('leader').textContent`); leader == "" {
		t.Error("no leader on the cluster page")
	}
	b.screenshot("cluster")

	// The cluster's policy: namespaces' quotas, priority classes, webhooks, tiers.
	checkPolicyPages(t, s, b)
}

// visible is the expression of whether sel is on the page and shown.
func visible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e !== null && e.offsetParent !== null; })()`, jsString(sel))
}

// TestWebConsoleHasOnlyTheTokensRights: signed in with a read-only token, the console
// lands in the namespace the token may read, shows the workload and no control the token
// may not use (no Scale, Delete, Restart, Move, Logs, Exec, on the workload's page or the
// instance's, where its container's memory is still graphed; no terminal to connect); when
// a policy grants scale, Scale appears without a reload (the server announces the change),
// and the server still refuses
// what the token lacks with its reason in words.
func TestWebConsoleHasOnlyTheTokensRights(t *testing.T) {
	requireDocker(t)
	s := startDev(t, t.TempDir())
	b := newBrowser(t, s)
	s.cleanupApps("uiro")
	s.applySpec(t, appSpec{name: "web", ns: "uiro", containers: []string{container("main", "sleep 3600", "")}}.json())
	tgs := s.running(t, "uiro", "web", 1)
	policy := filepath.Join(t.TempDir(), "ro.yaml")
	writePolicy := func(verbs string) {
		t.Helper()
		doc := "kind: acl-policy\nmetadata: {name: viewer}\nrules:\n  - {namespaces: [uiro], kinds: [\"*\"], verbs: [" + verbs + "]}\n"
		if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		s.mustBerth("acl", "policy", "apply", "-f", policy)
	}
	writePolicy("read")
	viewer := strings.TrimSpace(s.mustBerth("acl", "token", "create", "--policy", "viewer", "--name", "viewer", "-o", "name"))

	b.do("sign in as a viewer", 30*time.Second, chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), viewer), chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#workloads")))
	// Listing every namespace needs a rule for "*": the console lands in the viewer's.
	b.waitJS("the viewer's namespace picked", `location.hash.includes('ns=uiro')`, 30*time.Second)
	b.waitJS("web listed", `document.querySelector('#rows tr[data-key="uiro/web"]') !== null`, 30*time.Second)
	b.waitJS("no Nodes or Cluster tab for a token that may not read them",
		`document.querySelector('#nav a[data-page="nodes"]').hidden && document.querySelector('#nav a[data-page="cluster"]').hidden`, 10*time.Second)
	if opts := b.eval(`[...document.querySelectorAll('#ns option')].map((o) => o.value).join(',')`); opts != ",uiro" {
		t.Errorf("the viewer's namespaces: %q, want only uiro (and all)", opts)
	}

	b.do("open web", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/applications/uiro/web"), chromedp.WaitVisible(chromedp.CSS("#instances")))
	b.waitJS("its instance", `document.querySelectorAll('#instances .badge[data-phase="Running"]').length === 1`, 30*time.Second)
	b.waitJS("the rights asked", `document.querySelector('#instances tr[data-key] .move') !== null && document.getElementById('main').dataset.rights === 'known'`, 10*time.Second)
	for _, sel := range []string{"#scale", "#scale-to", "#delete", "#instances .restart", "#instances .move", `#instances a[href^="#/logs/"]`, `#instances a[href^="#/exec/"]`} {
		if b.eval(`String(`+visible(sel)+`)`) != "false" {
			t.Errorf("a viewer sees %s", sel)
		}
	}
	b.screenshot("readonly")

	// The terminal's page, opened by its address: no Connect, and a note why.
	b.do("open exec", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/exec/uiro/"+tgs[0].Metadata.Name), chromedp.WaitVisible(chromedp.CSS("#exec-refused")))
	if b.eval(`String(`+visible("#connect")+`)`) != "false" {
		t.Error("a viewer is offered Connect")
	}

	// The instance's own page: its container's usage (read on taskgroup is enough), and
	// no Logs or Exec for a token that may not use them.
	b.do("open the instance", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/taskgroup/uiro/"+tgs[0].Metadata.Name), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	b.waitJS("the instance's rights asked", `document.getElementById('exec') !== null && document.getElementById('main').dataset.rights === 'known'`, 10*time.Second)
	for _, sel := range []string{"#logs", "#exec"} {
		if b.eval(`String(`+visible(sel)+`)`) != "false" {
			t.Errorf("a viewer sees %s on the instance page", sel)
		}
	}
	b.waitJS("the container's memory graph", `(() => { const p = document.querySelector('#mem-main path.line'); return p !== null && Number(p.dataset.points) >= 2; })()`, 45*time.Second)

	// Every namespace's services are not the viewer's to list: the services page lands in
	// the viewer's namespace, which has none.
	b.do("services", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/services"), chromedp.WaitVisible(chromedp.CSS("#services")))
	b.waitJS("the viewer's namespace's services", `location.hash.includes('ns=uiro') && document.getElementById('services').textContent === 'No services here.'`, 30*time.Second)

	// A policy that now grants scale: Scale shows on the open page as soon as the server
	// announces the change (long before the 30 s refresh of the rights), and the scale
	// goes through; Delete still does not show.
	b.do("back to web", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/applications/uiro/web"), chromedp.WaitVisible(chromedp.CSS("#instances")))
	b.waitJS("the rights asked on web", `document.getElementById('main').dataset.rights === 'known'`, 10*time.Second)
	granted := time.Now()
	writePolicy("read, scale")
	b.waitJS("Scale shown once the policy grants it", visible("#scale"), 15*time.Second)
	t.Logf("Scale shown %v after the policy was applied", time.Since(granted).Round(time.Millisecond))
	if b.eval(`String(`+visible("#delete")+`)`) != "false" {
		t.Error("Delete shows for a token that may only scale")
	}
	b.do("scale to 2", 30*time.Second, chromedp.SetValue(chromedp.CSS("#scale-to"), "2"), chromedp.Click(chromedp.CSS("#scale")))
	b.waitJS("2 wanted", `document.getElementById('instance-count').textContent.endsWith('/2')`, 30*time.Second)
	b.screenshot("scale-granted")

	// What the console does not show, the server still refuses, naming the right in words.
	b.eval(`(fetch('/v1/namespaces/uiro/taskgroups/` + tgs[0].Metadata.Name + `/logs', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('berth.token')}})
		.then((r) => r.json()).then((j) => { window.refusal = j.error.message; }), 'sent')`)
	b.waitJS("the logs refused", `typeof window.refusal === 'string'`, 30*time.Second)
	out := b.eval(`window.refusal`)
	if !strings.Contains(out, "may not read the logs of task group in namespace uiro") {
		t.Errorf("the refusal of the viewer's logs: %q", out)
	}
	checkViewerPolicy(t, s, b, "uiro")
}
