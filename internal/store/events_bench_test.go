package store

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// BenchmarkRecordEvents writes batches of 250 new records (a burst's "instance N is
// Running", five per task group, over ten namespaces) into a store that already holds
// 20,000 records: the event writer's work for one batch, bounds included, with the
// default bounds. Besides time and allocations (of the whole process: the embedded etcd
// applies the writes in it) it reports the process's CPU time and the reads the writer
// sent etcd (Gets: the counts of namespaces and of the cluster) per batch. Run it with a
// fixed count so that every run writes the same records (docs/benchmarks.md, "Event
// records"): go test -run '^$' -bench BenchmarkRecordEvents -benchtime 80x -benchmem
func BenchmarkRecordEvents(b *testing.B) {
	resetStore(b)
	ctx := context.Background()
	s, kv := countingStore(b)
	const (
		batch      = 250
		namespaces = 10
		prefill    = 20_000
	)
	events := func(round int) []v4.Event {
		evs := make([]v4.Event, batch)
		for i := range evs {
			tg := fmt.Sprintf("%d.web%d.bench-%d.c.1", i/5, round, i%namespaces)
			evs[i] = v4.Event{Reason: "InstanceRunning", Kind: v4.KindProcess, Namespace: fmt.Sprint("bench-", i%namespaces),
				Name: fmt.Sprintf("web%d-%d", round, i/5), TaskGroup: tg, Message: fmt.Sprintf("instance %d of %s is Running", i%5, tg)}
		}
		return evs
	}
	for round := range prefill / batch {
		if err := s.RecordEvents(ctx, events(-1-round)); err != nil {
			b.Fatal(err)
		}
	}
	batches := make([][]v4.Event, 0, b.N)
	for round := range b.N {
		batches = append(batches, events(round))
	}
	kv.reads()
	cpu := processCPU(b)
	b.ReportAllocs()
	b.ResetTimer()
	for _, evs := range batches {
		if err := s.RecordEvents(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	gets, _ := kv.reads()
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(len(gets))/float64(b.N), "reads/op")
}

// processCPU is the CPU time the process used so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
