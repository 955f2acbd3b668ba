package podbench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
)

// BenchmarkPodStart measures how long a pod takes from Run to Running on each runtime:
// one main container ("main"), the same with a sidecar and two init tasks
// ("init2+sidecar"), and ten main containers ("10-containers"), in the host's network,
// which every runtime has; and on Docker the first two in a bridge network ("-bridge"),
// where the init tasks make the pod a network holder. Each op starts a pod,
// then kills and removes it off the clock; ms-to-running/op is the start alone. Run with
// -benchtime=Nx.
func BenchmarkPodStart(b *testing.B) {
	rts := runtimes(b)
	shapes := []struct {
		name string
		pod  func(name string) *v4.TaskGroup
	}{
		{"main", func(name string) *v4.TaskGroup { return podSpec(name, busybox("web", "exec sleep 3600", nil)) }},
		{"init2+sidecar", func(name string) *v4.TaskGroup {
			return podSpec(name, busybox("side", "exec sleep 3600", &v4.Lifecycle{Sidecar: true}),
				busybox("init1", "true", &v4.Lifecycle{Init: true}), busybox("init2", "true", &v4.Lifecycle{Init: true}),
				busybox("web", "exec sleep 3600", nil))
		}},
		{"init2+sidecar-bridge", func(name string) *v4.TaskGroup {
			tg := podSpec(name, busybox("side", "exec sleep 3600", &v4.Lifecycle{Sidecar: true}),
				busybox("init1", "true", &v4.Lifecycle{Init: true}), busybox("init2", "true", &v4.Lifecycle{Init: true}),
				busybox("web", "exec sleep 3600", nil))
			tg.Spec.Template.Spec.NetworkMode = "BRIDGE"
			return tg
		}},
		{"main-bridge", func(name string) *v4.TaskGroup {
			tg := podSpec(name, busybox("web", "exec sleep 3600", nil))
			tg.Spec.Template.Spec.NetworkMode = "BRIDGE"
			return tg
		}},
		{"10-containers", func(name string) *v4.TaskGroup {
			var cs []v4.Container
			for i := range 10 {
				cs = append(cs, busybox("c"+strconv.Itoa(i), "exec sleep 3600", nil))
			}
			return podSpec(name, cs...)
		}},
	}
	for _, shape := range shapes {
		for _, rt := range rts {
			b.Run(shape.name+"/"+rt.name, func(b *testing.B) {
				if strings.HasSuffix(shape.name, "-bridge") && rt.name != "docker" {
					b.Skip("a BRIDGE pod on containerd is a CNI pod, and the benchmark sets up no CNI network (docs/runtimes.md)")
				}
				rep := &reports{last: map[string]v4.TaskGroupStatus{}}
				e := executor.New(executor.Config{NodeName: "bench-node", HostIP: "127.0.0.1", DataDir: b.TempDir(),
					Drivers: map[string]driver.Driver{"docker": rt.drv}, Logger: quiet, Report: rep.report})
				defer e.Close()
				var total time.Duration
				n := 0
				for b.Loop() {
					tg := shape.pod(unique(shape.name, n))
					tg.Spec.Template.Spec.Runtime = rt.handler
					n++
					began := time.Now()
					e.Run(context.Background(), tg)
					rep.waitRunning(b, tg.Metadata.Name)
					total += time.Since(began)
					b.StopTimer()
					e.Kill(tg.Metadata.Namespace, tg.Metadata.Name)
					if err := e.Remove(context.Background(), tg.Metadata.Namespace, tg.Metadata.Name); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-running/op")
			})
		}
	}
}
