package v4

import (
	"fmt"
	"strings"
	"testing"
)

// Values that BCS accepted are accepted with its meaning: a warning where berth rewrites
// them, none where the value is a plain default.
func TestBCSValues(t *testing.T) {
	app := `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{%s"containers":[{"image":"x"%s}]}}}}`
	for _, tc := range []struct {
		name    string
		doc     string
		check   func(Object) string
		want    string
		warning string
	}{
		{"a network type other than cni is cnm", fmt.Sprintf(app, `"networkType":"bridge",`, ""),
			func(o Object) string { return PodSpecOf(o).NetworkType }, "cnm", `spec.template.spec.networktype "bridge" is read as "cnm"`},
		{"cni stays cni", fmt.Sprintf(app, `"networktype":"CNI",`, ""),
			func(o Object) string { return PodSpecOf(o).NetworkType }, "cni", ""},
		{"a health check without a type is dropped", fmt.Sprintf(app, "", `,"healthChecks":[{"type":"","intervalSeconds":5},{"type":"TCP","tcp":{"port":80}}]`),
			func(o Object) string { return PodSpecOf(o).Containers[0].HealthChecks[0].Type }, "TCP",
			"spec.template.spec.containers[0].healthChecks[0] has no type and is dropped, as BCS did"},
		{"a timeout not below the interval runs", fmt.Sprintf(app, "", `,"healthChecks":[{"type":"TCP","intervalSeconds":20,"timeoutSeconds":20,"tcp":{"port":80}}]`),
			func(o Object) string { return fmt.Sprint(PodSpecOf(o).Containers[0].HealthChecks[0].TimeoutSeconds) }, "20",
			"spec.template.spec.containers[0].healthChecks[0].timeoutSeconds 20 is not below intervalSeconds (20): BCS's executor failed every launch"},
		{"a service port without a protocol is tcp", `{"apiVersion":"v4","kind":"service","metadata":{"name":"s"},"spec":{"selector":{"a":"b"},"ports":[{"name":"p","servicePort":80,"protocol":""}]}}`,
			func(o Object) string { return o.(*Service).Spec.Ports[0].Protocol }, "tcp", ""},
		{"a secret's text that is not base64 is its value", `{"apiVersion":"v4","kind":"secret","metadata":{"name":"s"},"datas":{"id":{"content":"{{CLB_SECRETID}}"},"ok":{"content":"eA=="}}}`,
			func(o Object) string { return o.(*Secret).Datas["id"].Content + " " + o.(*Secret).Datas["ok"].Content }, "e3tDTEJfU0VDUkVUSUR9fQ== eA==",
			"datas.id.content is not base64 (illegal base64 data at input byte 0): BCS stored it as given"},
		{"a configmap file's text that is not base64 is its value", `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"c"},"datas":{"f":{"type":"FILE","content":"a b"},"u":{"type":"http","content":"http://h/x"}}}`,
			func(o Object) string {
				return o.(*ConfigMap).Datas["f"].Content + " " + o.(*ConfigMap).Datas["u"].Content
			}, "YSBi http://h/x",
			"datas.f.content is not base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var warns []string
			for _, w := range docs[0].Warnings {
				warns = append(warns, w.String())
			}
			got := strings.Join(warns, "\n")
			if (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
			if v := tc.check(docs[0].Object); v != tc.want {
				t.Errorf("value %q, want %q", v, tc.want)
			}
		})
	}
}

// Recreate is a strategy of its own; BCS's ForceUpdate is read as it, with a warning.
func TestDeploymentStrategies(t *testing.T) {
	doc := `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"d"},"spec":{"instance":2,"selector":{"a":"b"},"strategy":{"type":%q},` +
		`"template":{"spec":{"containers":[{"image":"x"}]}}}}`
	for _, tc := range []struct{ typ, want, warning string }{
		{"recreate", StrategyRecreate, ""},
		{"ForceUpdate", StrategyRecreate, `spec.strategy.type "ForceUpdate" is read as "Recreate"`},
		{"", StrategyRollingUpdate, ""},
	} {
		docs, err := Parse([]byte(fmt.Sprintf(doc, tc.typ)))
		if err != nil {
			t.Fatalf("%q: %v", tc.typ, err)
		}
		d := docs[0].Object.(*Deployment)
		var warns []string
		for _, w := range docs[0].Warnings {
			warns = append(warns, w.String())
		}
		got := strings.Join(warns, "\n")
		if d.Spec.Strategy.Type != tc.want || (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
			t.Errorf("%q: type %q, warnings %q; want %q, %q", tc.typ, d.Spec.Strategy.Type, got, tc.want, tc.warning)
		}
	}
}
