package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
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
// groups. `make bench-ui`; the figures are in docs/benchmarks.md, "Web console".
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
	br.do("leave", time.Minute, chromedp.Navigate("about:blank"))
	br.do("open the workloads", time.Minute, chromedp.Navigate(url))
	br.waitJS("the first paint", `performance.getEntriesByName('berth:workloads-painted').length > 0`, time.Minute)
	ms, err := strconv.ParseFloat(br.eval(`String(performance.getEntriesByName('berth:workloads-painted')[0].startTime)`), 64)
	if err != nil {
		b.Fatal(err)
	}
	if ms > 1000 {
		b.Logf("%s painted at %.0f ms; requests:\n%s", url, ms, br.eval(
			`performance.getEntriesByType('resource').map(e => Math.round(e.startTime) + ' +' + Math.round(e.duration) + ' ' + e.name).join('\n')`))
	}
	return ms
}
