package agent

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/executor"
)

// What the node uses now (GET /v1/node/usage on the agent, v4.NodeUsage): the machine
// from /proc, and the sum of its instances from the same driver reads as a task group's
// usage. A node may run hundreds of instances, so the work of an answer is bounded: one
// sample serves every caller for nodeUsageInterval, and a sample reads at most
// usageParallel tasks at a time.

const (
	nodeUsageInterval = 2 * time.Second
	usageParallel     = 8
	// sampleTimeout bounds one sample; it is not the caller's deadline, since callers
	// share the sample and one that gives up must not cut it short for the others.
	sampleTimeout = 5 * time.Second
	userHZ        = 100 // /proc/stat's ticks per second (USER_HZ) on every Linux berth runs on
)

// podUsage is what a sample reads of the executor.
type podUsage interface {
	List() []executor.PodRef
	Usage(ctx context.Context, namespace, name string) ([]v4.TaskUsage, error)
}

// nodeSampler measures the node, at most once per nodeUsageInterval; it starts nothing
// that outlives a call.
type nodeSampler struct {
	pods              podUsage
	procStat, meminfo string
	now               func() time.Time

	mu   sync.Mutex // held while sampling: callers meanwhile wait for that sample
	last *nodeSample
}

// nodeSample is one measure, with the counters the next one's rates start from.
type nodeSample struct {
	at                  time.Time
	usage               v4.NodeUsage
	hostBusy, hostTotal uint64             // /proc/stat ticks, every CPU
	cpus                int                // the CPUs /proc/stat lists
	tasks               map[string]float64 // CPU seconds of each task measured, by pod/task
	// pods is each pod's use (by namespace/name), for the revocable tier (revocable.go):
	// its memory, and its cores over the window.
	pods map[string]podUse
}

// podUse is what one pod uses now; unmeasured is set when a task of it could not be.
type podUse struct {
	cores      float64
	memory     uint64
	unmeasured bool
}

func newNodeSampler(pods podUsage) *nodeSampler {
	return &nodeSampler{pods: pods, procStat: "/proc/stat", meminfo: "/proc/meminfo", now: time.Now}
}

// sample answers the last sample when it is recent, else measures anew.
func (s *nodeSampler) sample(ctx context.Context) v4.NodeUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.last != nil && now.Sub(s.last.at) < nodeUsageInterval {
		return s.last.usage
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sampleTimeout)
	defer cancel()
	cur := s.measure(ctx, now)
	prev := s.last
	s.last = cur
	if prev == nil {
		return cur.usage
	}
	window := cur.at.Sub(prev.at).Seconds()
	u := &cur.usage
	u.WindowSeconds = window
	if cur.hostTotal > prev.hostTotal && cur.hostBusy >= prev.hostBusy {
		// The busy share of all CPUs' ticks, times the CPUs: cores busy.
		u.Host.CPUCores = float64(cur.hostBusy-prev.hostBusy) / float64(cur.hostTotal-prev.hostTotal) * float64(cur.cpus)
	}
	for k, sec := range cur.tasks {
		if before, ok := prev.tasks[k]; ok && sec >= before && window > 0 {
			u.Instances.CPUCores += (sec - before) / window
			pod := k[:strings.LastIndexByte(k, '/')]
			pu := cur.pods[pod]
			pu.cores += (sec - before) / window
			cur.pods[pod] = pu
		}
	}
	return cur.usage
}

// podUses is each pod's use in the last sample (taken anew when it is not recent).
func (s *nodeSampler) podUses(ctx context.Context) (map[string]podUse, time.Time) {
	s.sample(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return nil, time.Time{}
	}
	return maps.Clone(s.last.pods), s.last.at
}

// measure reads the machine and every instance not ended.
func (s *nodeSampler) measure(ctx context.Context, now time.Time) *nodeSample {
	cur := &nodeSample{at: now, tasks: map[string]float64{}, pods: map[string]podUse{}}
	u := &cur.usage
	u.Time = now.UTC()
	var errs []string
	busy, total, n, err := readCPUTicks(s.procStat)
	if err != nil {
		errs = append(errs, err.Error())
	}
	cur.hostBusy, cur.hostTotal, cur.cpus = busy, total, n
	u.Host.CPUSeconds = float64(busy) / userHZ
	memTotal, memAvail, err := readMemInfo(s.meminfo)
	if err != nil {
		errs = append(errs, err.Error())
	}
	u.Host.MemoryTotalBytes, u.Host.MemoryBytes = memTotal, memTotal-min(memAvail, memTotal)
	u.Host.Error = strings.Join(errs, "; ")

	var pods []executor.PodRef
	for _, p := range s.pods.List() {
		if !v4.Terminal(p.Status.Phase) {
			pods = append(pods, p)
		}
	}
	u.Instances.Count = len(pods)
	results := make([][]v4.TaskUsage, len(pods))
	sem := make(chan struct{}, usageParallel)
	var wg sync.WaitGroup
	for i, p := range pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], _ = s.pods.Usage(ctx, p.Namespace, p.Name) // a pod gone meanwhile counts nothing
		})
	}
	wg.Wait()
	for i, tasks := range results {
		pod := pods[i].Namespace + "/" + pods[i].Name
		pu := podUse{unmeasured: tasks == nil}
		for _, t := range tasks {
			if t.Error != "" {
				u.Instances.Unmeasured++
				pu.unmeasured = true
				continue
			}
			pu.memory += t.MemoryBytes
			u.Instances.Tasks++
			u.Instances.MemoryBytes += t.MemoryBytes
			cur.tasks[pod+"/"+t.Name] = t.CPUSeconds
		}
		cur.pods[pod] = pu
	}
	return cur
}

// readCPUTicks reads the busy and total ticks of all CPUs from /proc/stat's "cpu" line
// (idle and iowait are idle; guest time is already in user) and counts the cpuN lines
// (the CPUs online, at least 1).
func readCPUTicks(path string) (busy, total uint64, cpus int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 1, fmt.Errorf("cpu time: %w", err)
	}
	found := false
	for l := range strings.Lines(string(b)) {
		fields := strings.Fields(l)
		switch {
		case len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu"):
		case fields[0] != "cpu":
			cpus++
		case len(fields) >= 5 && !found:
			found = true
			var idle uint64
			for i, v := range fields[1:min(len(fields), 9)] { // user nice system idle iowait irq softirq steal
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return 0, 0, 1, fmt.Errorf("cpu time: %s field %d %q: %w", path, i+1, v, err)
				}
				total += n
				if i == 3 || i == 4 {
					idle += n
				}
			}
			busy = total - idle
		}
	}
	if !found {
		return 0, 0, 1, fmt.Errorf("cpu time: no cpu line in %s", path)
	}
	return busy, total, max(cpus, 1), nil
}

// readMemInfo reads MemTotal and MemAvailable (bytes) from a meminfo file.
func readMemInfo(path string) (total, avail uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("memory in use: %w", err)
	}
	defer f.Close()
	var seen int
	sc := bufio.NewScanner(f)
	for sc.Scan() && seen < 2 {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "MemTotal:" && fields[0] != "MemAvailable:" {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("memory in use: %s %q: %w", fields[0], fields[1], err)
		}
		if fields[0] == "MemTotal:" {
			total = kb << 10
		} else {
			avail = kb << 10
		}
		seen++
	}
	if seen < 2 {
		return total, avail, fmt.Errorf("memory in use: no MemTotal or MemAvailable in %s", path)
	}
	return total, avail, nil
}

// handleNodeUsage answers the node's sample; the server adds what berth reserves.
func (a *Agent) handleNodeUsage(w http.ResponseWriter, r *http.Request) {
	u := a.nodeUsage.sample(r.Context())
	u.Node = a.cfg.NodeName
	writeJSON(w, http.StatusOK, u)
}
