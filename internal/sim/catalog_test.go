package sim

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Each ready instance counts once per node, from its first Running report; an instance
// never reported Running (another simulator's) is not counted.
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
	if st := c.stats(); st.N != 2 || st.Max < st.P50 {
		t.Fatalf("stats %+v, want 2 samples", st)
	}
}
