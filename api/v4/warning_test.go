package v4

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

const processDoc = `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},%s` +
	`"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`

// Keys that BCS declares and berth ignores are accepted with a warning naming the key
// and why, in any case; a key that is neither berth's nor BCS's is dropped with a
// warning too, and refused by a strict parse.
func TestIgnoredBCSKeysWarn(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		warnings    []string
		err         string
	}{
		{"declared by BCS", `"updatePolicy":{"updateDelay":5},`, []string{"updatePolicy is ignored by berth (BCS parsed it and never used it)"}, ""},
		{"another case", `"UPDATEPOLICY":null,`, []string{"UPDATEPOLICY is ignored by berth (BCS parsed it and never used it)"}, ""},
		{"a typo of it", `"updatePolice":{},`, []string{`updatePolice unknown field "updatePolice" is dropped, as BCS's decoder did`}, ""},
		{"none", ``, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(fmt.Sprintf(processDoc, tc.extra)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range docs[0].Warnings {
				got = append(got, w.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings %q, want %q", got, tc.warnings)
			}
			_, err = ParseValidated([]byte(fmt.Sprintf(processDoc, tc.extra)), ValidateStrict)
			if (err != nil) != (len(tc.warnings) > 0) {
				t.Errorf("strict: %v, want an error for each warning %q", err, tc.warnings)
			}
		})
	}
}

// In a stream, a warning's path names its document; a stream's warnings are bounded.
func TestWarningsOfAStream(t *testing.T) {
	one := fmt.Sprintf(processDoc, `"updatePolicy":{},`)
	docs, err := Parse([]byte("[" + one + "," + strings.Replace(one, `"name":"a"`, `"name":"b"`, 1) + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if w := docs[1].Warnings; len(w) != 1 || w[0].Field != "documents[1].updatePolicy" {
		t.Errorf("the second document's warnings: %+v", w)
	}

	var stream []string
	for i := range maxWarnings + 10 {
		stream = append(stream, strings.Replace(one, `"name":"a"`, fmt.Sprintf(`"name":"p%d"`, i), 1))
	}
	docs, err = Parse([]byte("[" + strings.Join(stream, ",") + "]"))
	if err != nil {
		var fe FieldErrors
		errors.As(err, &fe)
		t.Fatal(fe)
	}
	n := 0
	for _, d := range docs {
		n += len(d.Warnings)
	}
	if n != maxWarnings {
		t.Errorf("%d warnings for %d documents, want the bound %d", n, len(docs), maxWarnings)
	}
}

// Every ignored key is one that berth's type lacks (else it would never warn), and
// docs/compat.md lists it.
func TestIgnoredKeysAreNotBerthsAndAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/compat.md")
	if err != nil {
		t.Fatal(err)
	}
	for typ, keys := range bcsIgnored {
		for key := range keys {
			if _, ok := infoOf(typ).lookup(key); ok {
				t.Errorf("%s.%s is berth's own field, yet listed as ignored", typ.Name(), key)
			}
			if !strings.Contains(string(doc), "`"+key+"`") {
				t.Errorf("docs/compat.md does not list %s's ignored key %q", typ.Name(), key)
			}
		}
	}
}

// Ignored keys deep in a document warn at their path.
func TestIgnoredKeysDeepInADocument(t *testing.T) {
	doc := `{"apiVersion":"v4","kind":"process","metadata":{"name":"a","clusterName":"BCS-MESOS-1"},
		"constraint":{"nodeSelector":{"a":"b"}},
		"spec":{"instance":1,"selector":{"app":"a"},"template":{"metadata":{"creationTimestamp":null},"spec":{"nodeSelector":{"a":"b"},
		"processes":[{"procName":"a","startCmd":"./a","procGroup":"g","ports":[{"name":"http","hostPort":8080,"hostIP":"0.0.0.0"}],
		"resources":{"limits":{"cpu":"1","memory":"64"},"extendedResources":[{"name":"gpu","value":1,"InnerIP":"10.0.0.1"}]}}]}}}}`
	docs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range docs[0].Warnings {
		got = append(got, w.Field)
	}
	slices.Sort(got)
	want := []string{"constraint.nodeSelector", "metadata.clusterName", "spec.selector", "spec.template.metadata.creationTimestamp",
		"spec.template.spec.nodeSelector", "spec.template.spec.processes[0].ports[0].hostIP", "spec.template.spec.processes[0].procGroup",
		"spec.template.spec.processes[0].resources.extendedResources[0].InnerIP"}
	if !slices.Equal(got, want) {
		t.Errorf("warnings at\n%q\nwant\n%q", got, want)
	}
}

// Keys that BCS's own templates and guides write although its types lack them warn too,
// and a misspelling of one is refused by a strict parse.
func TestKeysOfBCSTemplates(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"apiVersion":"v4","kind":"deployment","metadata":{"name":"d"},"spec":{"instance":1,"selector":{"a":"b"},"strategy":{"type":"RollingUpdate","rollingupdate":{"autoUpgrade":true,"pause":false}},"template":{"spec":{"containers":[{"image":"x"}]}}}}`,
			"spec.strategy.rollingupdate.autoUpgrade spec.strategy.rollingupdate.pause"},
		{`{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x","healthChecks":[{"type":"TCP","protocol":"tcp","path":"/p","tcp":{"port":80}}]}]}}}}`,
			"spec.template.spec.containers[0].healthChecks[0].path spec.template.spec.containers[0].healthChecks[0].protocol"},
		{`{"apiVersion":"v4","kind":"service","metadata":{"name":"s"},"spec":{"selector":{"a":"b"},"ports":[{"name":"http","protocol":"HTTP","servicePort":8080,"containerPort":8000}]}}`,
			"spec.ports[0].containerPort"},
	} {
		docs, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%v in %s", err, tc.doc)
		}
		var got []string
		for _, w := range docs[0].Warnings {
			got = append(got, w.Field)
		}
		slices.Sort(got)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("warnings at %q, want %s", got, tc.want)
		}
	}
	_, err := ParseValidated([]byte(`{"apiVersion":"v4","kind":"service","metadata":{"name":"s"},"spec":{"selector":{"a":"b"},"ports":[{"name":"http","servicePort":80,"containerPrt":8000}]}}`), ValidateStrict)
	if err == nil || !strings.Contains(err.Error(), `unknown field "containerPrt"`) {
		t.Errorf("a misspelt key: %v", err)
	}
}

// The bound holds for what BCS's values read berth's way (readBCSValues) too, and for
// the stream as a whole while it is read: a secret of thousands of items that are not
// base64 gets maxWarnings of them, and refused with validate=strict, as many errors, not
// one each; a document after the stream's bound is spent builds none.
func TestWarningsBoundedWhileRead(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"s","namespace":"ns"},"datas":{`)
	for i := range 5 * maxWarnings {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":{"content":"not base64!"}`, i)
	}
	b.WriteString("}}")
	secret := b.String()
	docs, err := Parse([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(docs[0].Warnings); n != maxWarnings {
		t.Errorf("%d warnings, want the bound %d", n, maxWarnings)
	}
	_, err = ParseValidated([]byte(secret), ValidateStrict)
	var fe FieldErrors
	if !errors.As(err, &fe) || len(fe) != maxWarnings {
		t.Errorf("strict: %d errors, want the bound %d", len(fe), maxWarnings)
	}

	// decodeDocument of a document whose stream spent the bound builds no warning.
	v := map[string]any{}
	if err := json.Unmarshal([]byte(secret), &v); err != nil {
		t.Fatal(err)
	}
	_, errs, warns := decodeDocument(v, ValidateWarn, maxWarnings)
	if len(errs) != 0 || len(warns) != 0 {
		t.Errorf("after the stream's bound: %d errors, %d warnings, want none", len(errs), len(warns))
	}
}
