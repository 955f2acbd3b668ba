package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// uiSecretValue is the value of the secret the worker takes an env from: the instance
// page must never show it.
const uiSecretValue = "ui-secret-value-never-shown"

// uiWorker is a process of ns that sleeps, with a random host port, a literal env and an
// env from a secret (uiSecret).
func uiWorker(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q,"labels":{"app":"uiworker"}},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"exec sleep 3600",
		"ports":[{"name":"http","hostPort":0,"protocol":"TCP"}],
		"env":[{"name":"MODE","value":"demo"}],
		"secrets":[{"secretName":"uidb","items":[{"type":"env","dataKey":"password","keyOrPath":"DB_PASSWORD"}]}],
		"resources":{"requests":{"cpu":"0.1","memory":"16"},"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`, name, ns)
}

func uiSecret(ns string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"uidb","namespace":%q},
	"datas":{"password":{"content":%q}}}`, ns, base64.StdEncoding.EncodeToString([]byte(uiSecretValue)))
}

// checkInstancePage opens ns/name's first instance from its workload page (open in b):
// its task's state, its port with the host port the scheduler gave, its env with the
// secret named and its value nowhere, CPU and memory graphs drawn from at least two
// samples of the node's measurements; then a terminal in the process that runs `id` and
// prints the uid the process runs as (the agent's dynamic user, 80000 and up).
func checkInstancePage(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	link := `#instances tr[data-key] a[href^="#/taskgroup/"]`
	b.waitJS("the instance's link", `document.querySelector('`+link+`') !== null`, 30*time.Second)
	b.click(link)
	b.do("open the instance", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#tasks")))
	b.waitJS("its task Running", `(document.querySelector('#tasks tr[data-task="sleep"] .state') || {}).textContent === 'Running'`, 30*time.Second)
	// What it reserves: 0.1 cores and 16 MB for its task, and the executor's overhead.
	if r := b.eval(`document.getElementById('reserved').textContent`); r != "0.11 cores, 80 MiB — the tasks' requests and the executor's overhead of 0.01 cores, 64 MiB" {
		t.Errorf("the instance's reserved: %q", r)
	}
	tgName := b.eval(`decodeURIComponent(location.hash.split('/').pop())`)
	code, body, err := s.httpGet(s.url + "/v1/namespaces/" + ns + "/taskgroups/" + tgName)
	if err != nil || code != 200 {
		t.Fatalf("GET the task group %s: %d %v %.200s", tgName, code, err, body)
	}
	var tg struct {
		Spec struct {
			Node  string `json:"node"`
			Ports []struct {
				Name     string `json:"name"`
				HostPort int    `json:"hostPort"`
			} `json:"ports"`
		} `json:"spec"`
		Status struct {
			Tasks []struct {
				Info struct {
					Pid int `json:"Pid"`
				} `json:"info"`
			} `json:"tasks"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &tg); err != nil || len(tg.Spec.Ports) != 1 {
		t.Fatalf("the task group: %v %.300s", err, body)
	}
	if node := b.eval(`document.getElementById('node').textContent`); node != tg.Spec.Node {
		t.Errorf("the instance's node: %q, want %q", node, tg.Spec.Node)
	}
	port := b.eval(`[...document.querySelectorAll('#ports tr td')].map((td) => td.textContent).join('|')`)
	if want := fmt.Sprintf("sleep|http||%d|TCP", tg.Spec.Ports[0].HostPort); port != want {
		t.Errorf("the instance's ports: %q, want %q", port, want)
	}
	env := b.eval(`[...document.querySelectorAll('#env tr')].map((tr) => tr.textContent).join('\n')`)
	if !strings.Contains(env, "MODEdemo") || !strings.Contains(env, "DB_PASSWORDfrom secret uidb, key password") {
		t.Errorf("the instance's env:\n%s", env)
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(uiSecretValue))
	if page := b.eval(`document.body.textContent`); strings.Contains(page, uiSecretValue) || strings.Contains(page, encoded) {
		t.Error("the instance page shows the secret's value")
	}

	// The graphs: lines drawn from the node's samples (a rate needs two).
	drawn := func(id string) string {
		return fmt.Sprintf(`(() => { const p = document.querySelector('#%s path.line'); return p !== null && p.getAttribute('d').startsWith('M') && Number(p.dataset.points) >= 2; })()`, id)
	}
	b.waitJS("the CPU and memory graphs", drawn("cpu-sleep")+` && `+drawn("mem-sleep"), 45*time.Second)
	if mem := b.eval(`document.querySelector('#mem-sleep .now').textContent`); !regexp.MustCompile(`^[0-9.]+ (B|KiB|MiB) of 16 MiB$`).MatchString(mem) || strings.HasPrefix(mem, "0 ") {
		t.Errorf("the memory graph's value: %q, want the bytes used of the 16 MiB limit", mem)
	}
	if cpu := b.eval(`document.querySelector('#cpu-sleep .now').textContent`); !strings.HasSuffix(cpu, " cores") {
		t.Errorf("the CPU graph's value: %q", cpu)
	}
	b.screenshot("instance")

	// A terminal in the process: `id` prints the user it runs as.
	b.click("#exec")
	b.do("open exec", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#connect")), chromedp.Click(chromedp.CSS("#connect")))
	screen := `(() => { const b = window.berthTerminal.buffer.active; let s = ''; for (let i = 0; i < b.length; i++) s += b.getLine(i).translateToString(true) + '\n'; return s; })()`
	b.waitJS("the terminal connected", `document.getElementById('exec-state').textContent === 'connected'`, 30*time.Second)
	b.typeInto(".xterm-helper-textarea", "id\r")
	b.waitJS("id's output", `/uid=\d+/.test(`+screen+`)`, 30*time.Second)
	out := b.eval(screen)
	m := regexp.MustCompile(`uid=(\d+)`).FindStringSubmatch(out)
	uid, _ := strconv.Atoi(m[1])
	if uid < 80000 {
		t.Errorf("id in the process's terminal: uid %d, want the agent's dynamic user (80000 and up):\n%s", uid, out)
	}
	// The uid the process itself runs as, read from the kernel.
	if len(tg.Status.Tasks) == 1 && tg.Status.Tasks[0].Info.Pid > 0 {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tg.Status.Tasks[0].Info.Pid))
		if err != nil {
			t.Fatalf("the process's status: %v", err)
		}
		if want := regexp.MustCompile(`(?m)^Uid:\s+(\d+)`).FindStringSubmatch(string(st)); want == nil || want[1] != m[1] {
			t.Errorf("id printed uid %s, the process runs as %v", m[1], want)
		}
	}
}

// uiPortless is a process the worker's service selects that has no port of the service:
// it matches and gets no traffic, which its endpoints say.
func uiPortless(ns string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":"portless","namespace":%q,"labels":{"app":"uiworker"}},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"exec sleep 3600",
		"resources":{"requests":{"cpu":"0.05","memory":"16"},"limits":{"cpu":"0.05","memory":"16"}}}]}}}}`, ns)
}

// uiServices are a service in front of the worker (uiWorker) and one no instance matches.
func uiServices(ns string) []string {
	return []string{
		fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"uiweb","namespace":%q},
		"spec":{"selector":{"app":"uiworker"},"ports":[{"name":"http","protocol":"tcp","servicePort":80}]}}`, ns),
		fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"uinobody","namespace":%q},
		"spec":{"selector":{"app":"nobody"},"ports":[{"name":"http","protocol":"tcp","servicePort":80}]}}`, ns),
	}
}

// checkServicesPage opens the services page of ns: the worker's service with its VIP
// (as the endpoints hold it), its port, and the worker's instance as its ready endpoint
// at the node's IP and the instance's host port, linked to the instance's page; the
// portless process as matching and not ready, with the reason; the service nothing
// matches says so; 51 more services make a second page.
func checkServicesPage(t *testing.T, s *devServer, b *browser, ns string) {
	t.Helper()
	vip := s.serviceVIP(t, ns, "uiweb")
	b.do("services", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/services?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#services")))
	row := func(name string) string {
		return fmt.Sprintf(`document.querySelector('#services tr[data-key="%s/%s"]')`, ns, name)
	}
	b.waitJS("uiweb with its ready instance", row("uiweb")+` !== null && `+row("uiweb")+`.querySelectorAll('li.ready').length === 1`, 30*time.Second)
	if got := b.eval(row("uiweb") + `.querySelector('.vip').textContent`); got != vip {
		t.Errorf("uiweb's VIP on the page: %q, want %q", got, vip)
	}
	if got := b.eval(row("uiweb") + `.querySelector('.ports').textContent`); got != "http 80/TCP" {
		t.Errorf("uiweb's ports: %q", got)
	}
	ep := b.eval(row("uiweb") + `.querySelector('li.ready').textContent`)
	if !regexp.MustCompile(`^worker #0 on \S+ — http: [0-9.]+:3[0-9]{4}$`).MatchString(ep) {
		t.Errorf("uiweb's endpoint: %q", ep)
	}
	b.waitJS("uiweb's instance that gets no traffic", row("uiweb")+`.querySelectorAll('li.not-ready').length === 1`, 30*time.Second)
	if nr := b.eval(row("uiweb") + `.querySelector('li.not-ready').textContent`); !strings.HasPrefix(nr, "portless #0 on ") ||
		!strings.HasSuffix(nr, " not ready: none of the service's ports is a port of the instance") {
		t.Errorf("uiweb's instance that gets no traffic: %q", nr)
	}
	if count := b.eval(row("uiweb") + `.querySelector('.count').textContent`); count != "1 ready, 1 not ready" {
		t.Errorf("uiweb's instances: %q", count)
	}
	b.waitJS("uinobody", row("uinobody")+` !== null`, 30*time.Second)
	if got := b.eval(row("uinobody") + `.querySelector('.endpoints').textContent`); got != "no instance matches" {
		t.Errorf("uinobody's endpoints: %q", got)
	}
	b.screenshot("services")

	// A page holds 50 services: 51 more, listed after the two above, fill the open page
	// as they come, and the last three go to a second page, which the open page offers
	// once it is full.
	var more []string
	for i := range 51 {
		more = append(more, fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"zpage-%02d","namespace":%q},
		"spec":{"selector":{"app":"nobody"},"ports":[{"name":"http","protocol":"tcp","servicePort":80}]}}`, i, ns))
	}
	s.applySpec(t, strings.Join(more, "\n"))
	b.waitJS("a full first page of 53", `document.getElementById('count').textContent === '50 of 53' && document.querySelectorAll('#services tr[data-key]').length === 50`, 30*time.Second)
	b.waitJS("the next page offered", `[...document.querySelectorAll('.pager a')].some((a) => a.textContent === 'Next page »')`, 30*time.Second)
	b.click(`.pager a:last-child`)
	b.waitJS("the second page", `location.hash.includes('continue=') && document.querySelectorAll('#services tr[data-key]').length === 3`, 30*time.Second)
	if got := b.eval(`[...document.querySelectorAll('#services tr[data-key]')].map((r) => r.dataset.key.split('/')[1]).join(',')`); got != "zpage-48,zpage-49,zpage-50" {
		t.Errorf("the second page of services: %s", got)
	}
	b.do("the first page again", 30*time.Second, chromedp.Navigate(s.url+"/ui/#/services?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#services")))
	b.waitJS("uiweb's endpoints", row("uiweb")+` !== null && `+row("uiweb")+`.querySelectorAll('li.ready').length === 1`, 30*time.Second)
	b.click(`#services tr[data-key="` + ns + `/uiweb"] li.ready a`)
	b.do("the endpoint's instance", 30*time.Second, chromedp.WaitVisible(chromedp.CSS("#tasks")))
}
