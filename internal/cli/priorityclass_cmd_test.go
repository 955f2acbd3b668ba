package cli

import (
	"encoding/json"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// `berth priorityclass apply` takes Kubernetes' PriorityClass (YAML) and puts berth's
// kind; a field a class does not have, or another kind, writes nothing.
func TestPriorityClassApply(t *testing.T) {
	api, url := newFakeAPI(t)
	var put []v4.PriorityClass
	api.routes["PUT /v1/priorityclasses/high"] = func(w httpResponseWriter, _ *httpRequest) {
		var pc v4.PriorityClass
		api.mu.Lock()
		b := api.bodies["PUT /v1/priorityclasses/high"] // the fake API read the body
		api.mu.Unlock()
		if err := json.Unmarshal(b, &pc); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		put = append(put, pc)
		w.Write(b)
	}
	doc := "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\npreemptionPolicy: Never\ndescription: serving\n"
	r := runCLIOK(t, url, doc, "priorityclass", "apply", "-f", "-")
	if !strings.Contains(r.stdout, "priorityclass/high applied (value 1000)") || len(put) != 1 ||
		put[0].Kind != v4.KindPriorityClass || put[0].Value != 1000 || put[0].PreemptionPolicy != v4.PreemptNever {
		t.Fatalf("out %q, put %+v", r.stdout, put)
	}
	for _, bad := range []string{
		"kind: PriorityClass\nmetadata:\n  name: high\nvalue: 1\nvalu: 2\n",
		"kind: Deployment\nmetadata:\n  name: high\nvalue: 1\n",
		"kind: PriorityClass\nvalue: 1\n",
	} {
		if r := runCLI(t, url, bad, "priorityclass", "apply", "-f", "-"); r.err == nil {
			t.Errorf("%q applied: %s", bad, r.stdout)
		}
	}
	if len(put) != 1 {
		t.Errorf("%d classes put, want only the good one", len(put))
	}
}
