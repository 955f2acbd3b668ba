package sim

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Each ready instance counts once per node, from its first Running report; an instance
// never reported Running (another simulator's) is not counted; samples are kept by the
// prefix of the namespace.
func TestCatalogLatency(t *testing.T) {
	c := newCatalogLatency()
	c.reported("ns", "0.web", v4.TaskGroupStatus{Phase: v4.StatusStarting})
	c.reported("ns", "0.web", v4.TaskGroupStatus{Phase: v4.StatusRunning})
	ep := &v4.Endpoints{Metadata: v4.ObjectMeta{Name: "web", Namespace: "ns"},
		Endpoints: []v4.Endpoint{{Target: v4.TargetRef{ID: "0.web"}}, {Target: v4.TargetRef{ID: "1.web"}}}}
	for _, node := range []string{"n1", "n2", "n1"} {
		c.observe(node, ep)
	}
	c.observe("n1", &v4.Service{})
	c.reported("rest-2", "0.api", v4.TaskGroupStatus{Phase: v4.StatusRunning})
	c.observe("n1", &v4.Endpoints{Metadata: v4.ObjectMeta{Name: "api", Namespace: "rest-2"},
		Endpoints: []v4.Endpoint{{Target: v4.TargetRef{ID: "0.api"}}}})
	stats := c.stats()
	if st := stats["ns"]; st.N != 2 || st.Max < st.P50 {
		t.Fatalf("stats of ns %+v, want 2 samples", st)
	}
	if st := stats["rest"]; st.N != 1 || len(stats) != 2 {
		t.Fatalf("stats %+v, want 1 sample for prefix rest", stats)
	}
}
