package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// uiConfigMap is a configmap of ns with one file key, app.conf, holding text.
func uiConfigMap(ns, name, text string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":%q,"namespace":%q},
	"datas":{"app.conf":{"type":"file","content":%q}}}`, name, ns, base64.StdEncoding.EncodeToString([]byte(text)))
}

// checkSpecYAML switches the spec of the workload page open in b to YAML and back.
func checkSpecYAML(t *testing.T, b *browser) {
	t.Helper()
	b.click(`button.format[data-format="yaml"]`)
	b.waitJS("the spec as YAML", `document.getElementById('definition').dataset.format === 'yaml'`, 10*time.Second)
	spec := b.eval(`document.getElementById('definition').textContent`)
	for _, want := range []string{"kind: process\n", "  name: worker\n", "        - procName: sleep\n", "startCmd: exec sleep 3600\n", `cpu: "0.1"`} {
		if !strings.Contains(spec, want) {
			t.Errorf("the spec as YAML has no %q:\n%s", want, spec)
		}
	}
	if strings.Contains(spec, "{") {
		t.Errorf("the YAML spec holds JSON:\n%s", spec)
	}
	b.click(`button.format[data-format="json"]`)
	b.waitJS("the spec as JSON", `document.getElementById('definition').textContent.startsWith('{')`, 10*time.Second)
}

// checkConfigPages opens the configmaps of ns (a configmap with its keys and sizes, one
// created meanwhile showing up live, and a configmap's own page with its value) and its
// secrets: the secret's name and key, and its value nowhere in the page.
func checkConfigPages(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	s.applySpec(t, uiConfigMap(ns, "uiconf", "listen: 8080\nmode: fast\n"))
	b.do("configmaps", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/configmaps?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#configmaps")))
	row := func(name string) string {
		return fmt.Sprintf(`document.querySelector('#configmaps tr[data-key=%s]')`, jsString(ns+"/"+name))
	}
	b.waitJS("the configmap", row("uiconf")+` !== null`, 30*time.Second)
	if keys := b.eval(row("uiconf") + `.querySelector('.keys').textContent`); keys != "app.conf (24 B)" {
		t.Errorf("uiconf's keys: %q, want app.conf (24 B)", keys)
	}
	b.eval(`document.getElementById('configmaps').dataset.mark = 'before'`)
	s.applySpec(t, uiConfigMap(ns, "uiconf-live", "x"))
	b.waitJS("a configmap created meanwhile", row("uiconf-live")+` !== null`, 30*time.Second)
	if b.eval(`document.getElementById('configmaps').dataset.mark || ''`) != "before" {
		t.Error("the configmaps were drawn again: the new one did not come through the watch")
	}
	b.screenshot("config")
	b.click(`#configmaps tr[data-key="` + ns + `/uiconf"] a`)
	b.waitJS("the configmap's value", `(document.querySelector('#items tr[data-key="app.conf"] pre.value') || {}).textContent === 'listen: 8080\nmode: fast\n'`, 30*time.Second)

	b.do("secrets", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/secrets?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#secrets")))
	b.waitJS("the secret and its key", `(document.querySelector('#secrets tr[data-key="`+ns+`/uidb"] .keys') || {}).textContent === 'password'`, 30*time.Second)
	html := b.eval(`document.documentElement.outerHTML`)
	for _, v := range []string{uiSecretValue, base64.StdEncoding.EncodeToString([]byte(uiSecretValue))} {
		if strings.Contains(html, v) {
			t.Errorf("the secrets page holds the secret's value %q", v)
		}
	}
}

// checkEventsPage opens the events of ns: newest first, a new one on top without a
// reload, and the Warning filter.
func checkEventsPage(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	b.do("events", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/events?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#events")))
	b.waitJS("the events", `document.getElementById('main').dataset.painted === 'events' && document.querySelectorAll('#events tr[data-id]').length > 0`, 30*time.Second)
	b.eval(`document.getElementById('events').dataset.mark = 'before'`)
	s.applySpec(t, uiConfigMap(ns, "uiconf-event", "y"))
	b.waitJS("a new event on top", `document.querySelector('#events tr[data-id]').textContent.includes('uiconf-event')`, 30*time.Second)
	if b.eval(`document.getElementById('events').dataset.mark || ''`) != "before" {
		t.Error("the events were drawn again: the new one did not come through the watch")
	}
	b.eval(`(() => { const s = document.getElementById('type'); s.value = 'Warning'; s.dispatchEvent(new Event('change')); return 'picked'; })()`)
	b.waitJS("Warnings only", `location.hash.includes('type=Warning') && document.getElementById('main').dataset.painted === 'events' && document.querySelector('#events tr') !== null`, 30*time.Second)
	if other := b.eval(`String(document.querySelectorAll('#events tr[data-id]:not([data-type="Warning"])').length)`); other != "0" {
		t.Errorf("%s events other than Warning under the Warning filter", other)
	}
	// The process no node fits has its warning.
	b.waitJS("huge's warning", `document.getElementById('events').textContent.includes('uiproc/huge')`, 30*time.Second)
	b.screenshot("events") // the warnings: a small picture
}
