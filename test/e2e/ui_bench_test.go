package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Shape of the first-paint benchmark: the simulated cluster's nodes, and the processes
// (namespaces x processes x instances) whose task groups it runs.
const (
	paintNodes      = 120
	paintProcesses  = 1000
	paintInstances  = 10
	paintNamespaces = 10
	// The other pages' objects, in the first task group's namespace: configmaps and
	// secrets of three keys each, and services that select nothing.
	paintConfigs  = 1000
	paintServices = 100
	// pageLoads is how many loads each of the other pages is measured over.
	pageLoads = 10
)

// totalOf reads the size of a list (its first page's total).
func (s *devServer) totalOf(b testing.TB, path string) int64 {
	b.Helper()
	resp, err := s.http.Get(s.url + path + "?limit=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct{ Total int64 }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&page) != nil {
		b.Fatalf("GET %s: %s", path, resp.Status)
	}
	return page.Total
}

// BenchmarkWebConsoleFirstPaint measures the workloads page of the web console, from the
// navigation to the first page of the list on screen (the berth:workloads-painted mark),
// on a server (built without the race detector) whose simulated cluster runs 10,000 task
// groups; then every other page's first paint on it (measurePages). `make bench-ui`; the
// figures are in docs/benchmarks.md, "Web console".
func BenchmarkWebConsoleFirstPaint(b *testing.B) {
	requireRoot(b)
	bin := buildPlain(b)
	s := startBerthBinary(b, bin, b.TempDir(), "server")
	var logs bytes.Buffer
	sim := exec.Command(bin, "sim", "--server", s.url, "--token", joinTokenOf(b, s.dataDir), "--nodes", strconv.Itoa(paintNodes),
		"--ramp", "5s", "--data-dir", b.TempDir(), "--min-start-delay", "10ms", "--max-start-delay", "50ms")
	sim.Env = s.cliEnv(b)
	sim.Stdout, sim.Stderr = &logs, &logs
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	simDone := make(chan struct{})
	go func() { sim.Wait(); close(simDone) }()
	b.Cleanup(func() { sim.Process.Kill(); <-simDone })
	deadline := time.Now().Add(2 * time.Minute)
	for s.totalOf(b, "/v1/nodes") < paintNodes {
		if time.Now().After(deadline) {
			b.Fatalf("the simulated nodes did not register in 2 minutes:\n%s", logs.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	load := exec.Command(bin, "sim", "load", "--apps", strconv.Itoa(paintProcesses), "--instances", strconv.Itoa(paintInstances),
		"--namespaces", strconv.Itoa(paintNamespaces), "--timeout", "10m")
	load.Env = s.cliEnv(b)
	if out, err := load.CombinedOutput(); err != nil {
		b.Fatalf("sim load: %v\n%s", err, out)
	} else {
		b.Logf("sim load:\n%s", out)
	}
	if n := s.totalOf(b, "/v1/taskgroups"); n != paintProcesses*paintInstances {
		b.Fatalf("%d task groups, want %d", n, paintProcesses*paintInstances)
	}

	br := newBrowser(b, s)
	br.do("sign in", time.Minute, chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), s.token), chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#workloads")))
	var paints, landings []float64
	b.ResetTimer()
	for b.Loop() {
		paints = append(paints, firstPaint(b, br, s.url+"/ui/#/workloads?kind=processes"))
	}
	b.StopTimer()
	slices.Sort(paints)
	b.ReportMetric(paints[len(paints)/2], "paint-p50-ms")
	b.ReportMetric(paints[len(paints)-1], "paint-max-ms")
	rows := br.eval(`String(document.querySelectorAll('#rows tr').length)`)
	b.Logf("first paints (ms): %.0f", paints)
	b.Logf("first paint over %d loads: p50 %.0f ms, max %.0f ms; %s rows shown of %s (%d task groups)",
		len(paints), paints[len(paints)/2], paints[len(paints)-1], rows, br.eval(`document.getElementById('count').textContent`), paintProcesses*paintInstances)
	br.screenshot("workloads-10000")
	measurePages(b, br, s)
	// The page after sign-in: the first page of every kind, in every namespace.
	for range 10 {
		landings = append(landings, firstPaint(b, br, s.url+"/ui/#/workloads"))
	}
	slices.Sort(landings)
	b.ReportMetric(landings[len(landings)/2], "landing-p50-ms")
	b.Logf("landing (every kind) first paints (ms): %.0f", landings)
}

// firstPaint loads url from about:blank and returns when the workloads page painted (ms
// from the navigation), logging what a slow load waited for.
func firstPaint(b *testing.B, br *browser, url string) float64 {
	return firstPaintOf(b, br, url, "berth:workloads-painted")
}

// firstPaintOf is firstPaint of the page at url, whose first paint sets the performance
// mark (the other pages set berth:page-painted).
func firstPaintOf(b *testing.B, br *browser, url, mark string) float64 {
	br.do("leave", time.Minute, chromedp.Navigate("about:blank"))
	br.do("open "+url, time.Minute, chromedp.Navigate(url))
	br.waitJS("the first paint", `performance.getEntriesByName('`+mark+`').length > 0`, time.Minute)
	ms, err := strconv.ParseFloat(br.eval(`String(performance.getEntriesByName('`+mark+`')[0].startTime)`), 64)
	if err != nil {
		b.Fatal(err)
	}
	if ms > 1000 {
		b.Logf("%s painted at %.0f ms; requests:\n%s", url, ms, br.eval(
			`performance.getEntriesByType('resource').map(e => Math.round(e.startTime) + ' +' + Math.round(e.duration) + ' ' + e.name).join('\n')`))
	}
	return ms
}

// measurePages measures the first paint of the pages besides the workloads page, each
// over pageLoads loads on the same cluster: an instance, the services, the configmaps
// and the secrets of one namespace (paintConfigs of each, paintServices services), and
// the events of every namespace. Each reports its p50 and max.
func measurePages(b *testing.B, br *browser, s *devServer) {
	b.Helper()
	var first struct {
		Items []struct {
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		} `json:"items"`
	}
	resp, err := s.http.Get(s.url + "/v1/taskgroups?limit=1")
	if err != nil {
		b.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&first)
	resp.Body.Close()
	if err != nil || len(first.Items) == 0 {
		b.Fatalf("the first task group: %v", err)
	}
	tg := first.Items[0].Metadata
	ns := tg.Namespace
	var docs []string
	for i := range paintConfigs {
		docs = append(docs,
			fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"conf-%04d","namespace":%q},"datas":{"a.conf":{"type":"file","content":"YQ=="},"b.conf":{"type":"file","content":"Yg=="},"c.conf":{"type":"file","content":"Yw=="}}}`, i, ns),
			fmt.Sprintf(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"secret-%04d","namespace":%q},"datas":{"user":{"content":"dQ=="},"password":{"content":"cA=="},"token":{"content":"dA=="}}}`, i, ns))
	}
	for i := range paintServices {
		docs = append(docs, fmt.Sprintf(`{"apiVersion":"v4","kind":"service","metadata":{"name":"svc-%03d","namespace":%q},"spec":{"selector":{"app":"nobody-%d"},"ports":[{"name":"http","protocol":"tcp","servicePort":80}]}}`, i, ns, i))
	}
	for start := 0; start < len(docs); start += 100 {
		body := strings.Join(docs[start:min(start+100, len(docs))], "\n") // a JSON stream
		resp, err := s.http.Post(s.url+"/v1/apply", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("apply: %s %.300s", resp.Status, out)
		}
	}
	pages := []struct{ name, route string }{
		{"instance", "#/taskgroup/" + ns + "/" + tg.Name},
		{"services", "#/services?ns=" + ns},
		{"configmaps", "#/configmaps?ns=" + ns},
		{"secrets", "#/secrets?ns=" + ns},
		{"events", "#/events"},
	}
	for _, p := range pages {
		var paints []float64
		for range pageLoads {
			paints = append(paints, firstPaintOf(b, br, s.url+"/ui/"+p.route, "berth:page-painted"))
		}
		slices.Sort(paints)
		b.ReportMetric(paints[len(paints)/2], p.name+"-p50-ms")
		b.ReportMetric(paints[len(paints)-1], p.name+"-max-ms")
		b.Logf("%s (%s) first paints (ms): %.0f", p.name, p.route, paints)
	}
	br.screenshot("events-10000")
}
