package v4

import (
	"strings"
	"testing"
)

// Every bad scheduling field is refused with its path, whatever the kind that holds it.
func TestSchedulingValidation(t *testing.T) {
	proc := func(spec string) string {
		return `{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,` + spec +
			`"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}`
	}
	job := func(spec string) string {
		return `{"apiVersion":"v4","kind":"job","metadata":{"name":"j"},"spec":{` + spec +
			`"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}`
	}
	cron := func(spec string) string {
		return `{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"c"},"spec":{"schedule":"@hourly","jobTemplate":{"spec":{` + spec +
			`"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}}}}}`
	}
	for _, c := range []struct {
		doc, field string
	}{
		{proc(`"priorityClassName":"../etc",`), "spec.priorityClassName"},
		{proc(`"priorityClassName":"High",`), "spec.priorityClassName"},
		{proc(`"priority":2000000001,`), "spec.priority"},
		{proc(`"priority":-2147483649,`), "spec.priority"},
		{proc(`"preemptionPolicy":"Always",`), "spec.preemptionPolicy"},
		{proc(`"disruptionBudget":{"maxUnavailable":-1},`), "spec.disruptionBudget.maxUnavailable"},
		{job(`"priority":3000000000,`), "spec.priority"},
		{cron(`"preemptionPolicy":"sometimes",`), "spec.jobTemplate.spec.preemptionPolicy"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want an error naming %s", c.doc, err, c.field)
		}
	}
	if _, err := Parse([]byte(proc(`"priorityClassName":"high.prio-1","priority":-5,"preemptionPolicy":"Never","disruptionBudget":{"maxUnavailable":0},`))); err != nil {
		t.Errorf("valid scheduling refused: %v", err)
	}
}

func TestPriorityClassValidate(t *testing.T) {
	for _, c := range []struct {
		pc    PriorityClass
		field string
	}{
		{PriorityClass{Metadata: ObjectMeta{Name: "ok"}, Value: 1}, ""},
		{PriorityClass{Metadata: ObjectMeta{Name: "Bad_Name"}}, "metadata.name"},
		{PriorityClass{Metadata: ObjectMeta{Name: "a", Namespace: "ns"}}, "metadata.namespace"},
		{PriorityClass{Metadata: ObjectMeta{Name: "a"}, Value: MaxSystemPriority + 1}, "value"},
		{PriorityClass{Metadata: ObjectMeta{Name: "a"}, PreemptionPolicy: "Always"}, "preemptionPolicy"},
		{PriorityClass{Metadata: ObjectMeta{Name: "a"}, Description: strings.Repeat("x", 1025)}, "description"},
	} {
		fe := c.pc.Validate()
		switch {
		case c.field == "" && len(fe) > 0:
			t.Errorf("%+v: %v", c.pc, fe)
		case c.field != "" && (len(fe) != 1 || fe[0].Field != c.field):
			t.Errorf("%+v: %v, want %s", c.pc, fe, c.field)
		}
	}
	s := &Scheduling{}
	if s.PriorityValue() != 0 || !s.MayPreempt() {
		t.Errorf("zero scheduling: %d %v", s.PriorityValue(), s.MayPreempt())
	}
	big := 5_000_000_000
	if (&Scheduling{Priority: &big}).PriorityValue() != MaxSystemPriority {
		t.Errorf("a value past the range is not clamped")
	}
}

// A nomination holds room on a node for its preemptor; one a user could write would
// reserve capacity on any node, and name victims, for nothing. Parse drops the status
// of every kind that preempts, holds included, whatever the document brings.
func TestSubmittedNominationsAreDropped(t *testing.T) {
	const nominated = `"status":{"nominated":[{"index":0,"node":"n1","victims":["x"],"at":"2026-01-01T00:00:00Z",
		"hold":{"resources":{"cpu":64,"memoryMB":1048576},"ports":[22,80],"priority":1000000000}}]}`
	const template = `"template":{"spec":{"processes":[{"procName":"a","startCmd":"x"}]}}`
	for _, c := range []struct {
		kind, doc string
		held      func(Object) []Nomination
	}{
		{"process", `{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},` + nominated +
			`,"spec":{"instance":1,` + template + `}}`,
			func(o Object) []Nomination { return o.(*Process).Status.Nominated }},
		{"application", `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},` + nominated +
			`,"spec":{"instance":1,"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
			func(o Object) []Nomination { return o.(*Application).Status.Nominated }},
		{"job", `{"apiVersion":"v4","kind":"job","metadata":{"name":"j"},` + nominated +
			`,"spec":{` + template + `}}`,
			func(o Object) []Nomination { return o.(*Job).Status.Nominated }},
		{"workflow", `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"w"},` + nominated +
			`,"spec":{"entrypoint":"main","templates":[{"name":"main","process":{"procName":"a","startCmd":"x"}}]}}`,
			func(o Object) []Nomination { return o.(*Workflow).Status.Nominated }},
	} {
		t.Run(c.kind, func(t *testing.T) {
			docs, err := Parse([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if n := c.held(docs[0].Object); len(n) != 0 {
				t.Errorf("submitted nominations kept: %+v", n)
			}
		})
	}
}
