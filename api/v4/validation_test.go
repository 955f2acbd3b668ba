package v4

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const (
	appDoc = `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"%s},` +
		`"spec":{"instance":1,"template":{"spec":{"containers":[{%s}]}}}}`
	svcDoc = `{"apiVersion":"v4","kind":"service","metadata":{"name":"s"%s},` +
		`"spec":{"selector":{"app":"a"},%s"ports":[{"name":"http","protocol":"tcp","servicePort":80}]}}`
)

// What BCS's decoder accepted is accepted by default, with the warning naming what berth
// did, and refused by a strict parse; the object is the resolved one.
func TestValidationModes(t *testing.T) {
	const c0 = "spec.template.spec.containers[0]"
	image := func(o Object) string { return o.(*Application).Spec.Template.Spec.Containers[0].Image }
	for _, tc := range []struct {
		name, doc string
		warning   string // the warning's String()
		check     func(Object) string
	}{
		{"unknown field", fmt.Sprintf(appDoc, "", `"image":"x","imagee":"y"`),
			c0 + `.imagee unknown field "imagee" is dropped, as BCS's decoder did (did you mean "image"?)`, nil},
		{"duplicate key", fmt.Sprintf(appDoc, "", `"image":"x","image":"y"`),
			c0 + `.image duplicate key "image": the earlier value is dropped, the last one is kept, as BCS's decoder did`,
			func(o Object) string { return image(o) }},
		{"keys equal but for case", fmt.Sprintf(appDoc, "", `"Image":"x","image":"y"`),
			c0 + `.image duplicate key "image" (it matches "Image": keys match case-insensitively): the earlier value is dropped, the last one is kept, as BCS's decoder did`,
			func(o Object) string { return image(o) }},
		{"the last of two, not the sorted last", fmt.Sprintf(appDoc, "", `"image":"x","Image":"y"`),
			c0 + `.image duplicate key "Image" (it matches "image": keys match case-insensitively): the earlier value is dropped, the last one is kept, as BCS's decoder did`,
			func(o Object) string { return image(o) }},
		{"objects merge", fmt.Sprintf(appDoc, `},"metadata":{"namespace":"ns"`, `"image":"y"`),
			`metadata duplicate key "metadata": the later value is merged into the earlier one, key by key, the later keys winning, as BCS's decoder did`,
			func(o Object) string {
				m := o.GetMeta()
				return m.Name + "/" + m.Namespace + "/" + map[bool]string{true: "y"}[image(o) == "y"]
			}},
		{"a later null", fmt.Sprintf(appDoc, "", `"image":"y","image":null`),
			c0 + `.image duplicate key "image": the later null is ignored and the earlier value kept, as BCS's decoder did`,
			func(o Object) string { return image(o) }},
		{"a map's key", fmt.Sprintf(appDoc, `,"labels":{"x":"1","x":"y"}`, `"image":"y"`),
			`metadata.labels.x duplicate key "x": the earlier value is dropped, the last one is kept, as BCS's decoder did`,
			func(o Object) string { return o.GetMeta().Labels["x"] }},
		{"kind twice", `{"apiVersion":"v4","kind":"secret","kind":"configmap","metadata":{"name":"a"},"datas":{}}`,
			`kind duplicate key "kind": the earlier value is dropped, the last one is kept, as BCS's decoder did`,
			func(o Object) string { return map[bool]string{true: "y"}[o.GetKind() == KindConfigMap] }},
		{"a service's type", fmt.Sprintf(svcDoc, "", `"type":"ClusterIP|NodePort",`),
			`spec.type "ClusterIP|NodePort" is read as "ClusterIP" (a list of alternatives, as BCS's templates write it: berth takes the first it knows; BCS never checked a service's type)`,
			func(o Object) string { return map[bool]string{true: "y"}[o.(*Service).Spec.Type == "ClusterIP"] }},
		{"an unknown service type", fmt.Sprintf(svcDoc, "", `"type":"NodePort",`),
			`spec.type "NodePort" is read as "ClusterIP" (berth knows "ClusterIP", "None" only, and reads any other value as the default; BCS never checked a service's type)`, nil},
		{"BCSBALANCE", fmt.Sprintf(svcDoc, `,"labels":{"BCSBALANCE":"roundrobin|source|leastconn"}`, ""),
			`metadata.labels.BCSBALANCE "roundrobin|source|leastconn" is read as "roundrobin" (a list of alternatives, as BCS's templates write it: berth takes the first it knows; BCS's load balancer never checked it)`,
			func(o Object) string {
				return map[bool]string{true: "y"}[o.GetMeta().Labels[BalanceLabel] == "roundrobin"]
			}},
		{"an image pull policy", fmt.Sprintf(appDoc, "", `"image":"y","imagePullPolicy":"Always|IfNotPresent"`),
			c0 + `.imagePullPolicy "Always|IfNotPresent" is read as "IfNotPresent" (BCS pulled the image only when it was missing for any value but "Always")`, nil},
		{"a second local check", fmt.Sprintf(appDoc, "", `"image":"y","ports":[{"name":"http","containerPort":80}],`+
			`"healthChecks":[{"type":"tcp","tcp":{"port":80}},{"type":"HTTP","http":{"port":80,"path":"/"}}]`),
			c0 + `.healthChecks[1] is dropped: a task runs one local check (HTTP, TCP or COMMAND), ` + c0 + `.healthChecks[0] here, as BCS's scheduler ran only the first`,
			func(o Object) string {
				hc := o.(*Application).Spec.Template.Spec.Containers[0].HealthChecks
				return map[bool]string{true: "y"}[len(hc) == 1 && hc[0].Type == CheckTCP]
			}},
		{"YAML keys equal but for case", "apiVersion: v4\nkind: application\nmetadata: {name: a}\nspec:\n  instance: 1\n  template:\n    spec:\n      containers:\n      - Image: x\n        image: y\n",
			c0 + `.image duplicate key "image" (it matches "Image": keys match case-insensitively): the earlier value is dropped, the last one is kept, as BCS's decoder did`,
			func(o Object) string { return image(o) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if w := docs[0].Warnings; len(w) != 1 || w[0].String() != tc.warning {
				t.Fatalf("warnings %q, want %q", w, tc.warning)
			}
			if tc.check != nil {
				if got := tc.check(docs[0].Object); got != "y" && got != "a/ns/y" {
					t.Errorf("the object holds %q", got)
				}
			}
			if errs := Validate(docs[0].Object); len(errs) > 0 {
				t.Errorf("the resolved object is invalid: %v", errs)
			}
			_, err = ParseValidated([]byte(tc.doc), ValidateStrict)
			var fe FieldErrors
			if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != docs[0].Warnings[0].Field {
				t.Fatalf("strict: %v, want one field error at %s", err, docs[0].Warnings[0].Field)
			}
		})
	}
}

// What BCS refused stays refused in both modes.
func TestValidationKeepsBCSRefusals(t *testing.T) {
	doc := `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},"restartPolicy":{"policy":"Never|Always"},` +
		`"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`
	for _, mode := range []Validation{ValidateWarn, ValidateStrict} {
		if _, err := ParseValidated([]byte(doc), mode); err == nil || !strings.Contains(err.Error(), "restartPolicy.policy") {
			t.Errorf("%s: %v", mode, err)
		}
	}
}

// A hostile document's warnings are bounded and their paths cut; strict refuses it.
func TestValidationHostile(t *testing.T) {
	var keys []string
	for i := range 3 * maxWarnings {
		keys = append(keys, fmt.Sprintf(`"%s%d":1`, strings.Repeat("k", 1000), i))
	}
	doc := fmt.Sprintf(appDoc, "", `"image":"x",`+strings.Join(keys, ","))
	docs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if w := docs[0].Warnings; len(w) != maxWarnings || len(w[0].Field) > maxWarningField+3 || len(w[0].Message) > 200 {
		t.Fatalf("%d warnings, the first %d+%d long", len(w), len(w[0].Field), len(w[0].Message))
	}
	if _, err := ParseValidated([]byte(doc), ValidateStrict); err == nil {
		t.Fatal("strict accepted it")
	}
}

func TestParseValidation(t *testing.T) {
	for in, want := range map[string]Validation{"": ValidateWarn, "warn": ValidateWarn, "Strict": ValidateStrict, " strict ": ValidateStrict} {
		if got, err := ParseValidation(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"true", "false", "lenient", "strictest"} {
		if _, err := ParseValidation(in); err == nil || !strings.Contains(err.Error(), "validate=") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// A refusal about a field names the unknown key dropped beside it that looks like its
// misspelling.
func TestValidationNamesTypos(t *testing.T) {
	doc := `{"apiVersion":"v4","kind":"process","metadata":{"name":"a"},` +
		`"spec":{"instanse":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"./a"}]}}}}`
	_, err := Parse([]byte(doc))
	var fe FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != "spec.instance" || !strings.Contains(fe[0].Message, `the document's "instanse", dropped as an unknown field`) {
		t.Fatalf("got %v", err)
	}
}

// Keys equal under Unicode's case folding ("nameſpace", with a long s, is "namespace" to
// encoding/json, as to the decoder) are a key given twice too: the last in the document
// wins, as it did in BCS's decoder, whatever their sorted order.
func TestValidationUnicodeFoldedKeys(t *testing.T) {
	doc := fmt.Sprintf(appDoc, `,"nameſpace":"x","namespace":"ns"`, `"image":"y"`)
	docs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if ns := docs[0].Object.GetMeta().Namespace; ns != "ns" {
		t.Errorf("namespace %q, want the last value", ns)
	}
	if w := docs[0].Warnings; len(w) != 1 || !strings.HasPrefix(w[0].String(), `metadata.namespace duplicate key "namespace" (it matches "nameſpace"`) {
		t.Errorf("warnings %q", w)
	}
}

// A document of an array stream is stored as its text again: a key given twice stays
// twice, in order, so that the stored definition reads as the object berth acts on
// (encoding/json's value kept only the last metadata, and its name was lost).
func TestValidationArrayElementKeepsItsKeys(t *testing.T) {
	cm := `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"},"metadata":{"namespace":"ns","Name":"b"},"datas":{"k":{"type":"file","content":"eA=="}}}`
	docs, err := Parse([]byte("[" + cm + `,{"apiVersion":"v4","kind":"configmap","metadata":{"name":"c"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"},"metadata":{"Name":"b","namespace":"ns"},"datas":{"k":{"content":"eA==","type":"file"}}}`; string(docs[0].Raw) != want {
		t.Errorf("raw %s\nwant %s", docs[0].Raw, want)
	}
	again, err := Parse(docs[0].Raw)
	if err != nil {
		t.Fatalf("the stored definition is refused: %v", err)
	}
	if m := again[0].Object.GetMeta(); m.Namespace != "ns" || m.Name != "b" {
		t.Errorf("the stored definition reads as %s/%s, want ns/b", m.Namespace, m.Name)
	}
}
