package v4

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fieldErrors(t *testing.T, err error) FieldErrors {
	t.Helper()
	var fe FieldErrors
	if !errors.As(err, &fe) {
		t.Fatalf("want FieldErrors, got %T: %v", err, err)
	}
	return fe
}

func hasError(errs FieldErrors, field, msg string) bool {
	for _, e := range errs {
		if e.Field == field && strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

// The process example in testdata/seed001_process.json, exactly as BCS users wrote it, is
// rejected with one error that lists every problem.
func TestSeed001AsWrittenIsRejected(t *testing.T) {
	docs, err := ParseValidated(mustRead(t, "seed001_process.json"), ValidateStrict)
	if err == nil {
		t.Fatalf("the BCS process document as written was accepted: %+v", docs)
	}
	errs := fieldErrors(t, err)
	const p0 = "spec.template.spec.processes[0]"
	want := []struct{ field, msg string }{
		{"constraint.intersectionItem[3].unionData[1].unionData", `"unionData" is misplaced inside a unionData element`},
		{"constraint.intersectionItem[3].unionData[2].unionData", `"unionData" is misplaced`},
		{"constraint.intersectionItem[3].unionData[3].unionData", `"unionData" is misplaced`},
		{p0 + ".startCmd", "unknown variable ${hospip} (did you mean ${hostip}?)"},
		{p0 + ".startCmd", `${ports.http-service}: port "http-service" is not declared`},
		{"restartPolicy.policy", `got "Never | Always | OnFailure" (a list of alternatives: pick exactly one)`},
		{p0 + ".uris[0].pullPolicy", `"Always|IfNotPresent" is read as "IfNotPresent", berth's default`},
		{p0 + ".healthChecks[0].type", `got "HTTP|TCP|COMMAND|REMOTE_HTTP|REMOTE_TCP" (a list of alternatives`},
		{p0 + ".healthChecks[0].http.scheme", `got "http|https" (a list of alternatives`},
	}
	for _, w := range want {
		if !hasError(errs, w.field, w.msg) {
			t.Errorf("missing %s: %s", w.field, w.msg)
		}
	}
	if !strings.HasPrefix(err.Error(), "15 problems:") {
		t.Errorf("one error listing every problem, got:\n%v", err)
	}
}

// With those problems fixed (testdata/seed001_process_fixed.json) the example validates
// and round-trips.
func TestSeed001FixedValidatesAndRoundTrips(t *testing.T) {
	docs, err := Parse(mustRead(t, "seed001_process_fixed.json"))
	if err != nil {
		t.Fatalf("fixed seed rejected: %v", err)
	}
	p := docs[0].Object.(*Process)
	task := p.Spec.Template.Spec.Processes[0]
	if got := task.ConfigMaps[0].Items[1].KeyOrPath; got != "/data/contianer/path/filename.txt" {
		t.Errorf("KeyOrPath (capitalised in the seed) not decoded: %q", got)
	}
	if p.Metadata.Namespace != "ns-a" || p.Spec.Instance != 3 || p.RestartPolicy.Policy != RestartAlways {
		t.Errorf("decoded wrong: %+v", p.Workload.Metadata)
	}
	if got := len(p.Constraint.IntersectionItem); got != 7 {
		t.Errorf("want 7 intersection items, got %d", got)
	}
	roundTrip(t, p)
}

func roundTrip(t *testing.T, obj Object) {
	t.Helper()
	enc, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(enc)
	if err != nil {
		t.Fatalf("re-decoding the encoded object failed: %v\n%s", err, enc)
	}
	if !reflect.DeepEqual(obj, again[0].Object) {
		t.Errorf("round trip changed the object:\nbefore %+v\nafter  %+v", obj, again[0].Object)
	}
}

func TestParseStreams(t *testing.T) {
	cm := `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"},"datas":{}}`
	sec := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"b"},"datas":{}}`
	yamlTwo := "# leading comment\napiVersion: v4\nkind: configmap\nmetadata:\n  name: a\ndatas: {}\n---\n---\napiVersion: v4\nkind: Secret\nmetadata: {name: b}\ndatas:\n  k: {content: aGk=}\n...\n"
	tests := []struct {
		name  string
		in    string
		kinds []Kind
		raw0  string
	}{
		{"one JSON", cm, []Kind{KindConfigMap}, cm},
		{"JSON stream", cm + "\n" + sec, []Kind{KindConfigMap, KindSecret}, cm},
		{"JSON array", "[" + cm + "," + sec + "]", []Kind{KindConfigMap, KindSecret}, ""},
		{"YAML documents", yamlTwo, []Kind{KindConfigMap, KindSecret}, "# leading comment\napiVersion: v4\nkind: configmap\nmetadata:\n  name: a\ndatas: {}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != len(tc.kinds) {
				t.Fatalf("want %d documents, got %d", len(tc.kinds), len(docs))
			}
			for i, k := range tc.kinds {
				if docs[i].Object.GetKind() != k {
					t.Errorf("doc %d: kind %s, want %s", i, docs[i].Object.GetKind(), k)
				}
				if docs[i].Object.GetMeta().Namespace != DefaultNamespace {
					t.Errorf("doc %d: namespace not defaulted", i)
				}
			}
			if tc.raw0 != "" && string(docs[0].Raw) != tc.raw0 {
				t.Errorf("raw of doc 0 = %q, want %q", docs[0].Raw, tc.raw0)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		syntax string // a plain (non-field) error containing this
		field  string
		msg    string
	}{
		{"empty", "  \n", "no document", "", ""},
		{"comments only", "# nothing\n---\n", "no document", "", ""},
		{"bad JSON", "{\"kind\": \n\"x\",}", "line 2, column 5: invalid character '}'", "", ""},
		{"truncated JSON", `{"kind":"process"`, "unexpected end", "", ""},
		{"bad YAML", "kind: [a\n", "invalid YAML in document 1", "", ""},
		{"duplicate YAML key", "kind: process\nkind: process\n", "duplicate key", "", ""},
		{"merge key", "a: &x {b: 1}\nc:\n  <<: *x\n", "merge keys", "", ""},
		{"not an object", `["a"]`, "", "", "a document must be an object"},
		{"unknown kind", `{"kind":"pod"}`, "", "kind", `unknown kind "pod"`},
		{"kind not string", `{"kind":3}`, "", "kind", "must be a string"},
		{"system kind", `{"kind":"Node","metadata":{"name":"n1"}}`, "", "kind", "written by berth itself"},
		{"no kind", `{"apiVersion":"v4"}`, "", "kind", "required"},
		{"unknown field", `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a","lables":{}},"datas":{}}`, "", "metadata.lables", `did you mean "labels"`},
		{"wrong type", `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"spec":{"instance":"3"}}`, "", "spec.instance", `must be an integer, got string "3"`},
		{"fraction", `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"spec":{"instance":1.5}}`, "", "spec.instance", "integer in range"},
		{"overflow", `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"spec":{"instance":99999999999999999999}}`, "", "spec.instance", "integer in range"},
		{"instance missing", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}`, "", "spec.instance", "required: the instance count (0 keeps"},
		{"instance null", `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"a"},"spec":{"instance":null,"template":{"spec":{"containers":[{"image":"x"}]}}}}`, "", "spec.instance", "required"},
		{"instance negative", `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"spec":{"instance":-1,"template":{"spec":{"processes":[{"procName":"p","startCmd":"x"}]}}}}`, "", "spec.instance", "must not be negative"},
		{"bool", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x","privileged":"yes"}]}}}}`, "", "spec.template.spec.containers[0].privileged", "true or false"},
		{"list", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":{"image":"x"}}}}}`, "", "spec.template.spec.containers", "must be a list"},
		{"object", `{"apiVersion":"v4","kind":"configmap","metadata":"a","datas":{}}`, "", "metadata", "must be an object"},
		{"quantity", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x","resources":{"limits":{"cpu":true}}}]}}}}`, "", "spec.template.spec.containers[0].resources.limits.cpu", "must be a number or a string"},
		{"time", `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a","creationTimestamp":"yesterday"},"datas":{}}`, "", "metadata.creationTimestamp", "RFC 3339"},
		{"case duplicate", `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a","Name":"b"},"datas":{}}`, "", "metadata.name", "duplicate"},
		{"second document", `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"},"datas":{}}` + `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"B.c"},"datas":{}}`, "", "documents[1].metadata.name", "no '.'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseValidated([]byte(tc.in), ValidateStrict)
			if err == nil {
				t.Fatal("accepted")
			}
			var fe FieldErrors
			isField := errors.As(err, &fe)
			if tc.syntax != "" {
				if isField || !strings.Contains(err.Error(), tc.syntax) {
					t.Fatalf("want plain error with %q, got %T %v", tc.syntax, err, err)
				}
				return
			}
			if !isField || !hasError(fe, tc.field, tc.msg) {
				t.Fatalf("want %s: %s, got %v", tc.field, tc.msg, err)
			}
		})
	}
}

func TestParseYAMLAliasBomb(t *testing.T) {
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i := range 8 {
		name := string(rune('b' + i))
		doc += name + ": &" + name + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = name
	}
	_, err := Parse([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("want a size error, got %v", err)
	}
}

// BCS's decoder matched keys case-insensitively, so these stay accepted.
func TestCaseInsensitiveKeysAndOperators(t *testing.T) {
	in := `{"apiVersion":"v4","Kind":"Process","metadata":{"name":"a"},
	"constraint":{"IntersectionItem":[{"UnionData":[{"name":"section","operate":"ClUSTER","type":4,"set":{"item":["sz"]}}]}]},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a",
	"configmaps":[{"name":"c","items":[{"type":"ENV","dataKey":"k","KeyOrPath":"K"}]}]}]}}},
	"restartPolicy":{"policy":"onfailure"}}`
	docs, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	p := docs[0].Object.(*Process)
	d := p.Constraint.IntersectionItem[0].UnionData[0]
	if d.Operate != OpCluster || p.RestartPolicy.Policy != RestartOnFailure || p.Kind != KindProcess {
		t.Errorf("not normalised: operate %q policy %q kind %q", d.Operate, p.RestartPolicy.Policy, p.Kind)
	}
	if it := p.Spec.Template.Spec.Processes[0].ConfigMaps[0].Items[0]; it.KeyOrPath != "K" || it.Type != InjectEnv {
		t.Errorf("item = %+v", it)
	}
}

func TestKindInferredAsBCSDoes(t *testing.T) {
	for in, want := range map[string]Kind{
		`{"apiVersion":"v4","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}`: KindProcess,
		`{"apiVersion":"v4","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x"}]}}}}`:                  KindApplication,
	} {
		docs, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if docs[0].Object.GetKind() != want {
			t.Errorf("kind %s, want %s", docs[0].Object.GetKind(), want)
		}
	}
}

func TestMaxUnavailableBCSSpelling(t *testing.T) {
	in := "apiVersion: v4\nkind: deployment\nmetadata: {name: web}\nspec:\n  instance: 2\n  selector: {app: web}\n  strategy:\n    type: RollingUpdate\n    rollingupdate: {maxUnavilable: 2, maxSurge: 3}\n"
	docs, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	ru := docs[0].Object.(*Deployment).Spec.Strategy.RollingUpdate
	if ru.MaxUnavailable != 2 || ru.MaxSurge != 3 || ru.RollingOrder != RollingCreateFirst || ru.StepDeadline != DefaultStepDeadline {
		t.Errorf("rollingupdate = %+v", ru)
	}
	roundTrip(t, docs[0].Object)
}

// A deployment's status is berth's: Parse drops what a document brings, SameContent
// ignores it, and an update without one keeps the stored status.
func TestDeploymentStatusIsBerths(t *testing.T) {
	in := `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"web"},
		"spec":{"instance":2,"template":{"spec":{"processes":[{"procName":"w","startCmd":"./w"}]}},
		"strategy":{"rollingupdate":{"stepDeadline":30}}},
		"status":{"phase":"Running","revision":3,"paused":true}}`
	docs, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Object.(*Deployment)
	if !d.Status.isZero() || d.Spec.Strategy.RollingUpdate.StepDeadline != 30 {
		t.Fatalf("status %+v, rollingupdate %+v", d.Status, d.Spec.Strategy.RollingUpdate)
	}
	stored := *d
	stored.Status = DeploymentStatus{Phase: DeploymentUpdating, Revision: 2, History: []DeploymentRevision{{Revision: 2}}}
	if !SameContent(d, &stored) {
		t.Error("SameContent must ignore the status")
	}
	CarryStatus(d, &stored)
	if d.Status.Revision != 2 || d.Status.RevisionOf(2) == nil || d.Status.RevisionOf(1) != nil {
		t.Errorf("carried status %+v", d.Status)
	}
	if TemplateHash(d.Spec.Template) == "" || TemplateHash(d.Spec.Template) == TemplateHash(&PodTemplate{}) {
		t.Error("template hash must tell templates apart")
	}
}

func TestSameContent(t *testing.T) {
	a, b := baseApp(), baseApp()
	b.Metadata.ResourceVersion = "42"
	b.Metadata.CreationTimestamp = b.Metadata.CreationTimestamp.AddDate(1, 0, 0)
	if !SameContent(a, b) {
		t.Error("store-set fields must not count")
	}
	if b.Metadata.ResourceVersion != "42" {
		t.Error("SameContent modified its argument")
	}
	b.Spec.Instance = 5
	if SameContent(a, b) {
		t.Error("a different instance count is a change")
	}
	if SameContent(a, baseProc()) {
		t.Error("different kinds are different")
	}
}

func TestStatusIsBerths(t *testing.T) {
	in := `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"status":{"phase":"Running","running":3},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`
	docs, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	p := docs[0].Object.(*Process)
	if !p.Status.Equal(WorkloadStatus{}) || !p.Status.Updated.IsZero() {
		t.Errorf("submitted status must be dropped, got %+v", p.Status)
	}
	stored := *p
	stored.Status = WorkloadStatus{Phase: AppRunning, Instances: 1, Running: 1}
	if !SameContent(p, &stored) {
		t.Error("status must not count as content")
	}
	if !p.Status.Equal(WorkloadStatus{}) || !p.Status.Updated.IsZero() {
		t.Error("SameContent must not change its arguments")
	}
	CarryStatus(p, &stored)
	if p.Status.Phase != AppRunning {
		t.Errorf("CarryStatus: %+v", p.Status)
	}
	p.Status.Phase = AppAbnormal
	CarryStatus(p, &stored)
	if p.Status.Phase != AppAbnormal {
		t.Error("CarryStatus must not override a status the writer set")
	}
}

func TestDaemonsetStatusIsBerths(t *testing.T) {
	in := `{"apiVersion":"v4","kind":"daemonset","metadata":{"name":"a"},"status":{"phase":"Running","desired":3},
	"spec":{"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`
	docs, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Object.(*Daemonset)
	if d.Status != (DaemonsetStatus{}) {
		t.Errorf("submitted status must be dropped, got %+v", d.Status)
	}
	stored := *d
	stored.Status = DaemonsetStatus{Phase: AppRunning, Desired: 2, Running: 2}
	if !SameContent(d, &stored) || d.Status != (DaemonsetStatus{}) || stored.Status.Desired != 2 {
		t.Error("status must not count as content, and SameContent must not change its arguments")
	}
	CarryStatus(d, &stored)
	if d.Status.Desired != 2 {
		t.Errorf("CarryStatus: %+v", d.Status)
	}
	CarryStatus(d, baseApp())
	if d.Status.Desired != 2 {
		t.Error("CarryStatus across kinds must do nothing")
	}
}

// spec.instance 0 is a workload that runs nothing (scale to zero), for every kind with
// instances; the key in any case counts as given.
func TestParseInstanceZero(t *testing.T) {
	const pod = `"template":{"spec":{"containers":[{"image":"x"}]}}`
	tests := []struct{ name, doc string }{
		{"application", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":0,` + pod + `}}`},
		{"process", `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"spec":{"instance":0,"template":{"spec":{"processes":[{"procName":"p","startCmd":"x"}]}}}}`},
		{"deployment", `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"a"},"spec":{"instance":0,` + pod + `}}`},
		{"key in upper case", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"Instance":0,` + pod + `}}`},
		{"yaml", "apiVersion: v4\nkind: application\nmetadata: {name: a}\nspec:\n  instance: 0\n  template: {spec: {containers: [{image: x}]}}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var n int
			switch o := docs[0].Object.(type) {
			case *Application:
				n = o.Spec.Instance
			case *Process:
				n = o.Spec.Instance
			case *Deployment:
				n = o.Spec.Instance
			default:
				t.Fatalf("decoded %T", o)
			}
			if n != 0 {
				t.Fatalf("spec.instance = %d", n)
			}
		})
	}
}
