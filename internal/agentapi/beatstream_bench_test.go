package agentapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

// beatLines is a heartbeat stream's body: n lines "{}", one a Read, as beats come off
// the network one at a time.
type beatLines struct{ n int }

func (b *beatLines) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	b.n--
	return copy(p, "{}\n"), nil
}

func (b *beatLines) Close() error { return nil }

// streamWriter is a response writer with what the heartbeat stream's handler asks of
// its ResponseController, writing nowhere.
type streamWriter struct {
	header http.Header
	wrote  int
}

func (w *streamWriter) Header() http.Header              { return w.header }
func (w *streamWriter) WriteHeader(int)                  {}
func (w *streamWriter) Write(p []byte) (int, error)      { w.wrote += len(p); return len(p), nil }
func (w *streamWriter) FlushError() error                { return nil }
func (w *streamWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *streamWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *streamWriter) EnableFullDuplex() error          { return nil }

// benchAPI is an agent API over the package's store with node n1 registered.
func benchAPI(b *testing.B) *API {
	b.Helper()
	storetest.Reset(b, testStore)
	storetest.CreateNode(b, testStore, "n1", v4.NodeResources{})
	a, err := New(Config{Store: testStore, Caches: cachetest.Registry(b, testStore, controller.RegisterCaches),
		Logger: storetest.QuietLogger(), Streams: context.Background(), NodeTTL: controller.DefaultNodeTTL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	a.minBeatGap = 0 // beats as fast as they come
	return a
}

// BenchmarkBeatStream is the server's cost of one beat on a heartbeat stream: reading
// the line, renewing the node's lease (queued), the acknowledgements that fall due.
func BenchmarkBeatStream(b *testing.B) {
	a := benchAPI(b)
	r := httptest.NewRequest(http.MethodPost, "/v1/agent/nodes/n1/heartbeats", nil)
	r.SetPathValue("name", "n1")
	// The first beat registers the lease (an etcd read and grant): not what is measured.
	r.Body = &beatLines{n: 1}
	if err := a.handleAgentHeartbeats(&streamWriter{header: http.Header{}}, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	r.Body = &beatLines{n: b.N}
	if err := a.handleAgentHeartbeats(&streamWriter{header: http.Header{}}, r); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBeatAck is the cost of writing one acknowledgement.
func BenchmarkBeatAck(b *testing.B) {
	w := &streamWriter{header: http.Header{}}
	rc := http.NewResponseController(w)
	ack := appendAck(nil, 10*time.Second, 3*time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if !writeBeatBytes(w, rc, ack) {
			b.Fatal("write failed")
		}
	}
}
