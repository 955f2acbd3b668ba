package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/sim"
)

// Shape of the policy benchmark (docs/benchmarks.md, "Policy overhead on placement"): a
// burst of processes over polNamespaces namespaces, placed on simulated nodes
// (benchShape); with policy, every namespace has a quota the burst stays under and
// polHooks webhook configurations (half mutating) match the processes.
const (
	polNamespaces = 20
	polHooks      = 10
	polRounds     = 2
)

// BenchmarkPolicyPlacement measures the end-to-end placement rate (processes applied
// through the API, their task groups placed by the scheduler and written, as `berth sim
// load` follows them) with no policy, and with 20 namespaces' quotas and 10 admission
// webhooks (and with either alone), in alternating rounds, each on a fresh server built
// without the race detector:
//
//	go test -count=1 -run XXX -bench '^BenchmarkPolicyPlacement$' -benchtime 1x -v -timeout 30m ./test/e2e/
func BenchmarkPolicyPlacement(b *testing.B) {
	requireRoot(b)
	shape := benchPolicyShape(b)
	bin := buildPlain(b)
	hookURL, bundle := startBenchHooks(b)
	// The quotas and the hooks alone too, to say which of them costs what.
	configs := []benchPolicy{{}, {quotas: true, hooks: true}, {quotas: true}, {hooks: true}}
	rates := map[benchPolicy][]float64{}
	for round := range polRounds {
		for i, p := range configs {
			b.Run(fmt.Sprintf("%s/round=%d", p, round+1), func(b *testing.B) {
				rate := placementRound(b, bin, hookURL, bundle, shape, p, fmt.Sprintf("pol%dc%d", round, i))
				rates[p] = append(rates[p], rate)
				b.ReportMetric(rate, "placements/s")
			})
		}
	}
	none := mean(rates[configs[0]])
	for _, p := range configs {
		if none > 0 {
			b.Logf("%-20s %6.0f placements/s %4.0f, ratio to none %.3f", p, mean(rates[p]), rates[p], mean(rates[p])/none)
		}
	}
	if both := mean(rates[configs[1]]); none > 0 {
		b.ReportMetric(both/none, "ratio")
	}
}

// benchPolicy is what a round configures: the quotas, the hooks, both or none.
type benchPolicy struct{ quotas, hooks bool }

func (p benchPolicy) String() string {
	switch {
	case p.quotas && p.hooks:
		return "quotas+hooks"
	case p.quotas:
		return "quotas"
	case p.hooks:
		return "hooks"
	}
	return "none"
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// placementRound starts a server and its simulated nodes, sets the policy when asked,
// and returns the burst's placements per second; the server and nodes stop with b.
func placementRound(b *testing.B, bin, hookURL, bundle string, shape benchShape, policy benchPolicy, run string) float64 {
	s := startBerthBinary(b, bin, b.TempDir(), "server")
	s.startSimBinary(b, bin, "--nodes", strconv.Itoa(shape.nodes), "--ramp", "5s")
	s.waitNodes(b, shape.nodes)
	time.Sleep(5 * time.Second) // the nodes' first reports settle
	setBenchPolicy(b, s, run, shape, policy, hookURL, bundle)
	c, err := client.New(s.url, client.WithHTTPClient(s.http))
	if err != nil {
		b.Fatal(err)
	}
	profiled := profileBurst(b, s, policy.String()+"-"+run)
	cpu := startBurstCPU(b, s.cmd.Process.Pid)
	res, err := sim.Load(context.Background(), c, sim.LoadConfig{Apps: shape.apps, Instances: shape.instances,
		Namespaces: polNamespaces, Run: run, Timeout: 5 * time.Minute, Concurrency: shape.concurrency})
	if err != nil {
		b.Fatalf("load: %v", err)
	}
	b.Logf("%s: %s", policy, cpu.end(b))
	<-profiled
	b.Logf("%s: %s", policy, res)
	if res.ApplyErrs > 0 {
		b.Fatalf("%d applies failed", res.ApplyErrs)
	}
	if policy.hooks {
		checkBenchHooked(b, s, run)
		logHookTimes(b, c)
	}
	return res.PlacementsPerSec
}

// setBenchPolicy gives each of the run's namespaces a quota twice what the burst asks
// there (its processes' instances of 0.01 core and 8 MB), and writes the hooks, as p
// asks.
func setBenchPolicy(b *testing.B, s *devServer, run string, shape benchShape, p benchPolicy, hookURL, bundle string) {
	perNS := (shape.apps + polNamespaces - 1) / polNamespaces * shape.instances
	q := fmt.Sprintf(`{"resources":{"cpu":%g,"memory":%d,"instances":%d}}`, 0.02*float64(perNS), 16*perNS, 2*perNS)
	for i := range polNamespaces {
		if p.quotas {
			benchPut(b, s, fmt.Sprintf("/v1/namespaces/%s-%d/quota", run, i), q)
		}
	}
	for i := range polHooks {
		if !p.hooks {
			break
		}
		typ, path := "Mutating", fmt.Sprintf("/label/h%d", i)
		if i%2 == 1 {
			typ, path = "Validating", "/allow"
		}
		doc := fmt.Sprintf(`{"kind":"admissionwebhook","metadata":{"name":"bench-%d"},"webhooks":[{"name":"bench.hooks.test","type":%q,`+
			`"clientConfig":{"url":%q,"caBundle":%q},"rules":[{"operations":["CREATE","UPDATE"],"kinds":["process"]}],`+
			`"namespaceSelector":{"operator":"In","values":[%q]},"failurePolicy":"Fail","timeoutSeconds":5}]}`,
			i, typ, hookURL+path, bundle, run+"-*")
		benchPut(b, s, fmt.Sprintf("/v1/admissionwebhooks/bench-%d", i), doc)
	}
}

func benchPut(b *testing.B, s *devServer, path, body string) {
	b.Helper()
	req, err := http.NewRequest(http.MethodPut, s.url+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		b.Fatalf("PUT %s: %s: %s", path, resp.Status, msg)
	}
}

// profileBurst saves the server's CPU profile of the next 4 seconds (the burst;
// BERTH_BENCH_POLICY_PROFILE_SECONDS sets another length, for a longer burst) as
// $BERTH_BENCH_POLICY_PROFILE/NAME.pprof when that variable names a folder, and this
// process's (the hook server's and the load's) as NAME-test.pprof; the channel closes
// when both are done (at once without the variable).
func profileBurst(b *testing.B, s *devServer, name string) <-chan struct{} {
	done := make(chan struct{})
	dir := os.Getenv("BERTH_BENCH_POLICY_PROFILE")
	if dir == "" {
		close(done)
		return done
	}
	seconds := benchEnvInt(b, "BERTH_BENCH_POLICY_PROFILE_SECONDS", 4, 60)
	own, err := os.Create(filepath.Join(dir, name+"-test.pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(own)
	}
	if err != nil {
		b.Logf("profile of the test process: %v", err)
	}
	go func() {
		defer close(done)
		if own != nil {
			defer own.Close()
			defer pprof.StopCPUProfile()
		}
		resp, err := s.http.Get(s.url + "/v1/debug/pprof/profile?seconds=" + strconv.Itoa(seconds))
		if err != nil {
			b.Logf("profile: %v", err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".pprof"), data, 0o644)
		}
		b.Logf("profile %s: %d bytes, %v", name, len(data), err)
	}()
	return done
}

// logHookTimes logs the mean of the webhook step (all the hooks of one write) and of one
// hook's call, as the server timed them (berth_admission_webhook_*): where an apply's
// extra time went.
func logHookTimes(b *testing.B, c *client.Client) {
	text, err := c.ServerMetrics(context.Background())
	if err != nil {
		b.Logf("no metrics: %v", err)
		return
	}
	sums := map[string]float64{}
	for _, line := range strings.Split(string(text), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if name, _, _ = strings.Cut(name, "{"); !ok || !strings.HasPrefix(name, "berth_admission_webhook_") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil && (strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count")) {
			sums[name] += v
		}
	}
	for _, m := range []string{"berth_admission_webhook_step_seconds", "berth_admission_webhook_duration_seconds"} {
		if n := sums[m+"_count"]; n > 0 {
			b.Logf("%s: %.0f, mean %.2f ms", m, n, sums[m+"_sum"]/n*1000)
		}
	}
}

// checkBenchHooked makes sure the hooks ran: a process carries every mutating hook's label.
func checkBenchHooked(b *testing.B, s *devServer, run string) {
	b.Helper()
	var p struct {
		Metadata struct{ Labels map[string]string }
	}
	if err := s.apiGet("/v1/namespaces/"+run+"-0/processes/app-0", &p); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < polHooks; i += 2 {
		if p.Metadata.Labels[fmt.Sprintf("bench-h%d", i)] != "yes" {
			b.Fatalf("process app-0 lacks hook %d's label: %v", i, p.Metadata.Labels)
		}
	}
}
