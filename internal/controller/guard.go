package controller

import (
	"fmt"
	"strings"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// specGuard keeps controllers from acting on objects that never passed the API's
// validation: written straight into etcd, by hand or by an older berth with other
// limits. Such an object is refused, not clamped: its controller leaves what runs as it
// is, says why in a Warning event and the status message, and acts again once a valid
// version is stored. Each version is validated once, not on every pass.
type specGuard struct {
	rec *recorder

	mu     sync.Mutex
	passed map[string]string // object -> the resourceVersion that validated
}

func newSpecGuard(rec *recorder) *specGuard {
	return &specGuard{rec: rec, passed: map[string]string{}}
}

// maxListedProblems bounds the problems one message lists.
const maxListedProblems = 5

// check returns "" when obj is valid, otherwise a message naming its problems (the
// first few), recorded once per version as an InvalidSpec Warning event.
func (g *specGuard) check(obj v4.Object) string {
	id, rv := objectID(obj), obj.GetMeta().ResourceVersion
	g.mu.Lock()
	ok := rv != "" && g.passed[id] == rv
	g.mu.Unlock()
	if ok {
		return ""
	}
	fe := v4.Validate(obj)
	if len(fe) == 0 {
		g.mu.Lock()
		g.passed[id] = rv
		g.mu.Unlock()
		g.rec.forget("invalid/" + id)
		return ""
	}
	problems := make([]string, 0, maxListedProblems)
	for _, e := range fe[:min(len(fe), maxListedProblems)] {
		problems = append(problems, e.Error())
	}
	if len(fe) > maxListedProblems {
		problems = append(problems, fmt.Sprintf("and %d more", len(fe)-maxListedProblems))
	}
	m := obj.GetMeta()
	msg := fmt.Sprintf("%s is invalid and left as it is (stored past the API's validation?): %s; store a valid version with `berth apply`",
		id, strings.Join(problems, "; "))
	g.rec.recordOnce("invalid/"+id, msg, v4.Event{Type: v4.EventWarning, Reason: "InvalidSpec",
		Kind: obj.GetKind(), Namespace: m.Namespace, Name: m.Name, Message: msg})
	return msg
}

// forget drops what is known of a deleted object.
func (g *specGuard) forget(kind v4.Kind, ns, name string) {
	id := objectIDOf(kind, ns, name)
	g.mu.Lock()
	delete(g.passed, id)
	g.mu.Unlock()
	g.rec.forget("invalid/" + id)
}

func objectID(obj v4.Object) string {
	m := obj.GetMeta()
	return objectIDOf(obj.GetKind(), m.Namespace, m.Name)
}

func objectIDOf(kind v4.Kind, ns, name string) string {
	if ns == "" {
		return fmt.Sprintf("%s %s", kind, name)
	}
	return fmt.Sprintf("%s %s/%s", kind, ns, name)
}
