package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// policyDocs writes the cluster policy the console's policy pages show: a priority class
// whose description is markup (it must show as text), and an admission webhook
// configuration that is never called (it selects deletes of secrets in a namespace
// nobody writes, and a failure is ignored).
func policyDocs(t *testing.T, s *devServer) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s.mustBerth("priorityclass", "apply", "-f", write("pc.yaml",
		"kind: PriorityClass\nmetadata: {name: ui-batch}\nvalue: 1000\npreemptionPolicy: Never\ndescription: \"<b>batch</b> work\"\n"))
	s.mustBerth("admissionwebhook", "apply", "-f", write("awh.yaml", `kind: admissionwebhook
metadata: {name: ui-labels}
webhooks:
- name: label.hooks.example
  type: Validating
  clientConfig: {url: "https://hooks.invalid:8443/label"}
  rules: [{operations: [DELETE], kinds: [secret]}]
  namespaceSelector: {operator: In, values: [ui-nobody]}
  timeoutSeconds: 3
  failurePolicy: Ignore
`))
}

// resourceUsed is what namespace ns uses of a quota's resource, as the API counts it.
func resourceUsed(t *testing.T, s *devServer, ns, resource string) float64 {
	t.Helper()
	var q struct {
		ResourceUsage map[string]float64 `json:"resourceUsage"`
	}
	if err := json.Unmarshal([]byte(s.mustBerth("quota", "get", ns, "-o", "json")), &q); err != nil {
		t.Fatalf("quota of %s: %v", ns, err)
	}
	return q.ResourceUsage[resource]
}

// quotaCell is the expression of a quota row's cell in the namespace section of ns.
func quotaCell(ns, resource, cell string) string {
	return `(document.querySelector('section[data-ns=` + jsString(ns) + `] tr[data-resource=` + jsString(resource) + `] td.` + cell + `') || {}).textContent`
}

// checkPolicyPages opens the policy pages against a server with a priority class, a
// webhook configuration and a namespace quota whose cpu the namespace uses in full: each
// page shows what the CLI shows, the cpu row is highlighted and memory's is not, the
// workload of the class shows its priority and tier, and the node what it lends.
func checkPolicyPages(t *testing.T, s *devServer, b *browser) {
	t.Helper()
	policyDocs(t, s)
	s.cleanupApps("uiq")
	app := strings.Replace(appSpec{name: "q", ns: "uiq", containers: []string{container("main", "sleep 3600", "")}}.json(),
		`"spec":{"instance":1,`, `"spec":{"instance":1,"priorityClassName":"ui-batch",`, 1)
	s.applySpec(t, app)
	cpu := strconv.FormatFloat(resourceUsed(t, s, "uiq", "cpu"), 'f', -1, 64)
	s.mustBerth("quota", "set", "uiq", "cpu="+cpu, "memory=1000000", "instances=10", "--default-request", "cpu=0.25,memory=64")

	b.do("the namespaces", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/namespaces"), chromedp.WaitVisible(chromedp.CSS(`section[data-ns="uiq"] table.quota`)))
	if used, limit := b.eval(quotaCell("uiq", "cpu", "used")), b.eval(quotaCell("uiq", "cpu", "limit")); used != cpu || limit != cpu {
		t.Errorf("uiq's cpu: used %q of %q, want %s of %s", used, limit, cpu, cpu)
	}
	if lim := b.eval(quotaCell("uiq", "instances", "limit")); lim != "10" {
		t.Errorf("uiq's instances limit: %q", lim)
	}
	row := func(r string) string {
		return `document.querySelector('section[data-ns="uiq"] tr[data-resource=` + jsString(r) + `]').className`
	}
	if hot, cool := b.eval(row("cpu")), b.eval(row("memory")); !strings.Contains(hot, "hot") || strings.Contains(cool, "hot") {
		t.Errorf("highlights: cpu %q (at its limit), memory %q (far below)", hot, cool)
	}
	if d := b.eval(`document.querySelector('section[data-ns="uiq"] table.defaults').textContent`); !strings.Contains(d, "0.25") || !strings.Contains(d, "64MB") {
		t.Errorf("uiq's limit defaults: %q", d)
	}
	b.screenshot("namespaces")

	b.do("the priority classes", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/priorityclasses"), chromedp.WaitVisible(chromedp.CSS(`#priorityclasses tr[data-key="ui-batch"]`)))
	pc := b.eval(`document.querySelector('#priorityclasses tr[data-key="ui-batch"]').textContent`)
	if !strings.Contains(pc, "1000") || !strings.Contains(pc, "Never") || !strings.Contains(pc, "<b>batch</b> work") {
		t.Errorf("the class's row: %q", pc)
	}
	if n := b.eval(`String(document.querySelectorAll('#priorityclasses b').length)`); n != "0" {
		t.Errorf("a description's markup became %s elements", n)
	}

	b.do("the webhooks", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/admissionwebhooks"), chromedp.WaitVisible(chromedp.CSS(`#admissionwebhooks tr[data-hook]`)))
	hook := b.eval(`document.querySelector('#admissionwebhooks tr[data-hook="label.hooks.example"]').textContent`)
	for _, want := range []string{"ui-labels", "Validating", "https://hooks.invalid:8443/label", "DELETE on secret", "In ui-nobody", "Ignore", "3s"} {
		if !strings.Contains(hook, want) {
			t.Errorf("the hook's row has no %q: %q", want, hook)
		}
	}
	b.click(`#admissionwebhooks a[href="#/admissionwebhook/ui-labels"]`)
	b.do("one configuration", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#hooks tr[data-hook]`)))
	if d := b.eval(`document.getElementById('admissionwebhook').textContent`); !strings.Contains(d, "all objects") || !strings.Contains(d, "the cluster CA") {
		t.Errorf("the configuration's page: %q", d)
	}
	b.screenshot("admissionwebhook")

	b.do("the workload of the class", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/w/applications/uiq/q"), chromedp.WaitVisible(chromedp.CSS("#priority")))
	if p, tier := b.eval(`document.getElementById('priority').textContent`), b.eval(`document.getElementById('tier').textContent`); p != "1000 (ui-batch, Never)" || tier != "guaranteed" {
		t.Errorf("the workload's priority %q and tier %q", p, tier)
	}
	checkNodeLends(t, s, b)
}

// checkNodeLends: the nodes page says what the node lends to the revocable tier, in
// cores and MB when its agent reports it (berth describe node), else that it lends
// nothing.
func checkNodeLends(t *testing.T, s *devServer, b *browser) {
	t.Helper()
	b.do("the nodes' lending", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/nodes"), chromedp.WaitVisible(chromedp.CSS("#rows tr[data-key] td.lends")))
	name := b.eval(`document.querySelector('#rows tr[data-key]').dataset.key`)
	lends := b.eval(`document.querySelector('#rows tr[data-key] td.lends').textContent`)
	want := regexp.MustCompile(`^nothing \(no report\)$`)
	if desc := s.mustBerth("describe", "node", name); strings.Contains(desc, "Revocable") && !strings.Contains(desc, "stale") {
		want = regexp.MustCompile(`^[0-9.]+ cores, [0-9.]+MB`)
	}
	if !want.MatchString(lends) {
		t.Errorf("what node %s lends: %q, want %v", name, lends, want)
	}
}

// checkViewerPolicy: a token that reads one namespace sees that namespace's quota on the
// namespaces page and no other's; another namespace's page says it is not allowed and
// shows none of its numbers; the webhooks (admin's to read) are not allowed either, the
// priority classes (every user's) are shown.
func checkViewerPolicy(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	s.mustBerth("quota", "set", ns, "instances=5")
	s.mustBerth("quota", "set", "uiro-other", "instances=7")
	b.do("the viewer's namespaces", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/namespaces"), chromedp.WaitVisible(chromedp.CSS(`#namespaces[data-loaded="true"]`)))
	if shown := b.eval(`[...document.querySelectorAll('section[data-ns]')].map((s) => s.dataset.ns).join(',')`); shown != ns {
		t.Errorf("the viewer's namespaces page shows %q, want only %s", shown, ns)
	}
	if lim := b.eval(quotaCell(ns, "instances", "limit")); lim != "5" {
		t.Errorf("the viewer's instances limit: %q, want 5", lim)
	}
	if text := b.eval(`document.getElementById('main').textContent`); strings.Contains(text, "uiro-other") {
		t.Errorf("the viewer sees another namespace: %q", text)
	}
	b.do("another namespace", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/namespace/uiro-other"), chromedp.WaitVisible(chromedp.CSS(`#namespaces[data-loaded="true"]`)))
	if b.eval(`String(document.querySelector('section[data-ns="uiro-other"] .denied') !== null && document.querySelector('table.quota') === null)`) != "true" {
		t.Errorf("another namespace's quota, for the viewer: %q", b.eval(`document.getElementById('main').textContent`))
	}
	b.screenshot("namespace-denied")
	b.do("the webhooks, refused", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/admissionwebhooks"), chromedp.WaitVisible(chromedp.CSS(`#admissionwebhooks .denied`)))
	b.do("the priority classes", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/priorityclasses"), chromedp.WaitVisible(chromedp.CSS(`#priorityclasses[data-loaded="true"]`)))
	if b.eval(`String(document.querySelector('#priorityclasses .denied') === null)`) != "true" {
		t.Error("the priority classes are refused to a user")
	}
}
