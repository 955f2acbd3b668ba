package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// checkNodesPage opens the nodes page: the node's row shows its measured CPU and memory
// beside what is reserved (the executors' overhead told apart) and allocatable, and
// opened, live graphs of them drawn from at
// least two of its agent's samples (GET /v1/nodes/NAME/usage).
func checkNodesPage(t *testing.T, s *devServer, b *browser) {
	t.Helper()
	b.do("open the nodes", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/nodes"), chromedp.WaitVisible(chromedp.CSS("#rows tr[data-key]")))
	name := b.eval(`document.querySelector('#rows tr[data-key]').dataset.key`)
	row := fmt.Sprintf(`document.querySelector('#rows tr[data-key=%s]')`, jsString(name))
	b.click(`#rows tr[data-key] button.expand`)
	drawn := func(id string) string {
		return fmt.Sprintf(`(() => { const ps = document.querySelectorAll('#%s path'); return ps.length === 2 && [...ps].every((p) => p.getAttribute('d').startsWith('M') && Number(p.dataset.points) >= 2); })()`, id)
	}
	cpu, mem := "node-cpu-"+name, "node-mem-"+name
	b.waitJS("the node's CPU and memory graphs", drawn(cpu)+` && `+drawn(mem), 45*time.Second)
	if v := b.eval(`document.querySelector('#` + mem + ` .now').textContent`); !regexp.MustCompile(`^[0-9.]+ (KiB|MiB|GiB) of [0-9.]+ (MiB|GiB|TiB)$`).MatchString(v) {
		t.Errorf("the node's memory graph: %q, want the bytes in use of the machine's", v)
	}
	if v := b.eval(`document.querySelector('#` + cpu + ` .now').textContent`); !strings.HasSuffix(v, " cores") {
		t.Errorf("the node's CPU graph: %q", v)
	}
	b.waitJS("the row's measured CPU", row+`.querySelector('td.cpu .used').textContent !== '…'`, 30*time.Second)
	// What is reserved says how much of it is the executors' overhead (the node runs
	// task groups here), with the reason in the cell's title.
	if c := b.eval(row + `.querySelector('td.cpu').textContent`); !regexp.MustCompile(`^[0-9.]+ used · [0-9.]+ reserved \([0-9.]+ executors\) / [0-9.]+$`).MatchString(c) {
		t.Errorf("the node's CPU cell: %q", c)
	}
	if m := b.eval(row + `.querySelector('td.mem').textContent`); !regexp.MustCompile(` used · [0-9.]+ (MiB|GiB) reserved \([0-9]+ MiB executors\) / `).MatchString(m) {
		t.Errorf("the node's memory cell: %q", m)
	}
	if why := b.eval(row + `.querySelector('td.mem .reserved').title`); !strings.Contains(why, "executors' overhead") {
		t.Errorf("the reserved memory's explanation: %q", why)
	}
	b.screenshot("node-usage")
	b.click(`#rows tr[data-key] button.expand`)
	b.waitJS("the graphs closed", `document.querySelector('#rows tr.detail') === null`, 10*time.Second)
}
