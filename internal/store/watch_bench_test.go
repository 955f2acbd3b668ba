package store

import (
	"context"
	"encoding/json"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkWatchChange is one change of a task group through a store watch, from etcd's
// watch response to the watch's channel (docs/benchmarks.md, "Watch events encoded
// once"): its decoding and the watch's queue, as the shared cache's watch of a kind
// takes each change.
func BenchmarkWatchChange(b *testing.B) {
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Namespace: "ns", Name: "0.web.ns.c.1", Labels: map[string]string{"app": "web"}},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Node: "n1",
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web --port 8080"}}}}}}
	val, err := json.Marshal(tg)
	if err != nil {
		b.Fatal(err)
	}
	kv := &mvccpb.KeyValue{Key: []byte(objectKey(v4.KindTaskGroup, "ns", tg.Metadata.Name)), Value: val, CreateRevision: 1, Version: 2}
	for _, c := range []struct {
		name string
		ev   *clientv3.Event
	}{
		{"modified", &clientv3.Event{Type: clientv3.EventTypePut, Kv: kv}},
		{"deleted", &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: kv.Key}, PrevKv: kv}},
	} {
		b.Run(c.name, func(b *testing.B) {
			wch := make(chan clientv3.WatchResponse)
			out := make(chan Event, watchBuffer)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				forward(ctx, testStore.log, wch, out, WatchLimit{}, 0, testStore.eventsOf(v4.KindTaskGroup), markRevisionEnd, nil)
			}()
			defer func() { cancel(); <-done }()
			resp := clientv3.WatchResponse{Events: []*clientv3.Event{c.ev}}
			b.ReportAllocs()
			for b.Loop() {
				c.ev.Kv.ModRevision++
				wch <- resp
				if ev := <-out; ev.Object == nil {
					b.Fatal("no object")
				}
			}
		})
	}
}
