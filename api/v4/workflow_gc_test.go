package v4

import (
	"strings"
	"testing"
	"time"
)

// TestWorkflowGCValidated: podGC and ttlStrategy take Argo's values, spelled in any
// case, and refuse the rest with the field named.
func TestWorkflowGCValidated(t *testing.T) {
	for _, tc := range []struct {
		fields, field string // field: "" when accepted
	}{
		{``, ""},
		{`"podGC":{"strategy":"onpodsuccess","deleteDelayDuration":"30s"}`, ""},
		{`"podGC":{"strategy":"Never"}`, ""},
		{`"podGC":{"strategy":"Sometimes"}`, "spec.podGC.strategy"},
		{`"podGC":{"deleteDelayDuration":"soon"}`, "spec.podGC.deleteDelayDuration"},
		{`"podGC":{"deleteDelayDuration":"-1s"}`, "spec.podGC.deleteDelayDuration"},
		{`"podGC":{"deleteDelayDuration":"9000h"}`, "spec.podGC.deleteDelayDuration"},
		{`"ttlStrategy":{"secondsAfterCompletion":0,"secondsAfterSuccess":60,"secondsAfterFailure":86400}`, ""},
		{`"ttlStrategy":{"secondsAfterSuccess":-1}`, "spec.ttlStrategy.secondsAfterSuccess"},
		{`"ttlStrategy":{"secondsAfterFailure":99999999999}`, "spec.ttlStrategy.secondsAfterFailure"},
		{`"ttlStrategy":{"secondsAfterCompletion":"soon"}`, "spec.ttlStrategy.secondsAfterCompletion"},
	} {
		doc := `{"kind":"workflow","metadata":{"name":"w"},"spec":{` + tc.fields
		if tc.fields != "" {
			doc += ","
		}
		doc += `"entrypoint":"m","templates":[{"name":"m","suspend":{}}]}}`
		docs, err := Parse([]byte(doc))
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s refused: %v", tc.fields, err)
			} else if g := docs[0].Object.(*Workflow).Spec.PodGC; g != nil && g.Strategy != WfPodGCOnPodSuccess && g.Strategy != WfPodGCNever {
				t.Errorf("%s: strategy %q not spelled as berth does", tc.fields, g.Strategy)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: want %s refused, got %v", tc.fields, tc.field, err)
		}
	}
}

func TestWorkflowGCDefaults(t *testing.T) {
	var s WorkflowSpec
	if s.PodGCStrategy() != WfPodGCOnWorkflowCompletion || s.PodGCDelay() != 0 {
		t.Errorf("defaults: %q %s", s.PodGCStrategy(), s.PodGCDelay())
	}
	s.PodGC = &WfPodGC{Strategy: WfPodGCNever, DeleteDelayDuration: "2m"}
	if s.PodGCStrategy() != WfPodGCNever || s.PodGCDelay() != 2*time.Minute {
		t.Errorf("set: %q %s", s.PodGCStrategy(), s.PodGCDelay())
	}
	zero, hour := 0, 3600
	ttl := &WfTTLStrategy{SecondsAfterCompletion: &hour, SecondsAfterFailure: &zero}
	for _, tc := range []struct {
		phase string
		want  time.Duration
	}{{WfSucceeded, time.Hour}, {WfFailed, 0}, {WfError, 0}} {
		if d, ok := ttl.TTL(tc.phase); !ok || d != tc.want {
			t.Errorf("TTL(%s) = %s, %v; want %s", tc.phase, d, ok, tc.want)
		}
	}
	if _, ok := (*WfTTLStrategy)(nil).TTL(WfSucceeded); ok {
		t.Error("no ttlStrategy gives a TTL")
	}
}
