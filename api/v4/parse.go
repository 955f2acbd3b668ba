package v4

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Document is one object decoded from a stream, with the exact text it came from
// (kept so users can see what they submitted).
type Document struct {
	Object Object
	Raw    []byte
	// Warnings are what was accepted and the author should know (Warning).
	Warnings []Warning
}

// Parse decodes every document in data (JSON or YAML, one or more documents), applies
// defaults and validates, leniently (ValidateWarn): ParseValidated with the default mode.
func Parse(data []byte) ([]Document, error) {
	return ParseValidated(data, ValidateWarn)
}

// ParseValidated decodes every document in data (JSON or YAML, one or more documents),
// applies defaults and validates. Input that is not JSON or YAML at all gives a plain
// error; any other problem in any document makes it return FieldErrors listing them all,
// and with several documents each path starts with "documents[i].". mode says what
// becomes of what BCS accepted and berth drops, resolves or reads its own way: a
// Warning of the Document (ValidateWarn) or a field error (ValidateStrict). The
// Document's Object is always what berth acts on.
func ParseValidated(data []byte, mode Validation) ([]Document, error) {
	raws, err := splitStream(data, mode)
	var all FieldErrors
	if dup, ok := errors.AsType[*duplicateKeyError](err); ok {
		all = append(all, FieldError{Field: dup.path, Message: dup.fieldMessage()})
	} else if err != nil {
		return nil, err
	}
	docs := make([]Document, 0, len(raws))
	warnings := 0
	for i, r := range raws {
		if len(all) >= maxFieldErrors {
			break // the answer lists no more: the documents left are not read
		}
		obj, errs, warns := decodeDocument(r.value, mode, warnings)
		warnings += len(warns)
		if mode == ValidateStrict {
			errs = append(errs, strictErrors(warns)...)
			warns = nil
		}
		if len(raws) > 1 {
			for j := range errs {
				errs[j].Field = documentPath(i, errs[j].Field)
			}
			for j := range warns {
				warns[j].Field = documentPath(i, warns[j].Field)
			}
		}
		all = append(all, errs...)
		docs = append(docs, Document{Object: obj, Raw: r.raw, Warnings: warns})
	}
	if len(all) > 0 {
		slices.SortStableFunc(all, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
		return nil, all.bounded()
	}
	return docs, nil
}

// documentPath is path within document i of a stream of several.
func documentPath(i int, path string) string {
	return strings.TrimSuffix(fmt.Sprintf("documents[%d].%s", i, path), ".")
}

// decodeDocument types, defaults and validates one generic document. streamWarnings is
// how many warnings the stream's earlier documents kept (decoder).
func decodeDocument(v any, mode Validation, streamWarnings int) (Object, FieldErrors, []Warning) {
	m := v
	if !isObject(v) {
		return nil, FieldErrors{{Message: fmt.Sprintf("a document must be an object, got %s", describe(v))}}, nil
	}
	kind, errs := documentKind(m)
	if kind == "" {
		return nil, errs, nil
	}
	obj, _ := New(kind)
	d := decoder{errs: errs, lenient: mode == ValidateWarn, streamWarnings: streamWarnings}
	decodeStruct("", m, reflect.ValueOf(obj).Elem(), &d)
	requireInstance(kind, m, &d.errs)
	errs = d.errs
	typeMetaOf(obj).Kind = kind // the decoder copied the input's spelling
	clearStatus(obj)            // status is berth's to write (a `get -o json` re-applied keeps working)
	readBCSValues(obj, &d)
	Default(obj)
	decoded := map[string]bool{}
	for _, e := range errs {
		decoded[e.Field] = true
	}
	for _, e := range Validate(obj) {
		if !decoded[e.Field] { // a field that failed to decode was reported already
			errs = append(errs, e)
		}
	}
	d.nameTypos(errs)
	return obj, errs, d.warnings
}

// documentKind reads "kind" (any case; the last one, as BCS's decoder kept), or infers
// it as BCS does from what the pod holds.
func documentKind(m any) (Kind, FieldErrors) {
	if v, ok := lookupFoldOK(m, "kind"); ok {
		s, ok := v.(string)
		if !ok {
			return "", FieldErrors{{Field: "kind", Message: fmt.Sprintf("must be a string, got %s", describe(v))}}
		}
		kind := Kind(strings.ToLower(strings.TrimSpace(s)))
		if kind.System() {
			msg := fmt.Sprintf("%s objects are written by berth itself and cannot be applied", kind)
			return "", FieldErrors{{Field: "kind", Message: msg}}
		}
		if !kind.Valid() {
			msg := fmt.Sprintf("unknown kind %q (known: %s)", truncate(s, 60), kindList())
			return "", FieldErrors{{Field: "kind", Message: msg}}
		}
		return kind, nil
	}
	pod := lookupFold(lookupFold(lookupFold(m, "spec"), "template"), "spec")
	switch {
	case lookupFold(pod, "processes") != nil:
		return KindProcess, nil
	case lookupFold(pod, "containers") != nil:
		return KindApplication, nil
	}
	return "", FieldErrors{{Field: "kind", Message: "required (one of " + kindList() + ")"}}
}

// SameContent reports whether two objects have the same content, ignoring what the store
// sets (resourceVersion, creationTimestamp) and the trace of the last change
// (TraceAnnotation). Apply uses it to report "unchanged".
func SameContent(a, b Object) bool {
	if a.GetKind() != b.GetKind() {
		return false
	}
	return bytes.Equal(contentJSON(a), contentJSON(b))
}

func contentJSON(o Object) []byte {
	m := o.GetMeta()
	rv, ct := m.ResourceVersion, m.CreationTimestamp
	m.ResourceVersion, m.CreationTimestamp = "", time.Time{}
	if _, ok := m.Annotations[TraceAnnotation]; ok {
		annotations := m.Annotations
		m.Annotations = maps.Clone(annotations)
		delete(m.Annotations, TraceAnnotation)
		if len(m.Annotations) == 0 {
			m.Annotations = nil
		}
		defer func() { m.Annotations = annotations }()
	}
	if st := statusOf(o); st.IsValid() {
		saved := reflect.ValueOf(st.Interface())
		st.SetZero()
		defer st.Set(saved)
	}
	if d, ok := o.(*Deployment); ok {
		saved := d.Status
		d.Status = DeploymentStatus{}
		defer func() { d.Status = saved }()
	}
	if d, ok := o.(*Dependency); ok {
		savedDep := d.Status
		d.Status = DependencyStatus{}
		defer func() { d.Status = savedDep }()
	}
	if n, ok := o.(*Notify); ok {
		savedNotify := n.Status
		n.Status = NotifyStatus{}
		defer func() { n.Status = savedNotify }()
	}
	b, err := json.Marshal(o)
	m.ResourceVersion, m.CreationTimestamp = rv, ct
	if err != nil {
		return nil
	}
	return b
}

// statusOf returns the settable status of the kinds whose status berth's controllers
// write (applications, processes, daemonsets, volumes, jobs), else the zero Value.
func statusOf(o Object) reflect.Value {
	switch w := o.(type) {
	case *Application:
		return reflect.ValueOf(&w.Status).Elem()
	case *Process:
		return reflect.ValueOf(&w.Status).Elem()
	case *Daemonset:
		return reflect.ValueOf(&w.Status).Elem()
	case *CSIVolume:
		return reflect.ValueOf(&w.Status).Elem()
	case *Workflow:
		return reflect.ValueOf(&w.Status).Elem()
	case *Job:
		return reflect.ValueOf(&w.Status).Elem()
	case *CronJob:
		return reflect.ValueOf(&w.Status).Elem()
	case *CronWorkflow:
		return reflect.ValueOf(&w.Status).Elem()
	}
	return reflect.Value{}
}

func clearStatus(o Object) {
	if st := statusOf(o); st.IsValid() {
		st.SetZero()
	}
	if d, ok := o.(*Deployment); ok {
		d.Status = DeploymentStatus{}
	}
	if d, ok := o.(*Dependency); ok {
		d.Status = DependencyStatus{}
	}
	if n, ok := o.(*Notify); ok {
		n.Status = NotifyStatus{}
	}
}

// CarryStatus keeps the stored object's status when an update (from a user, whose status
// is cleared) brings none: status belongs to the controllers.
func CarryStatus(updated, stored Object) {
	CarryStopped(updated, stored) // berth stop and start's, as the status is the controllers'
	u, s := statusOf(updated), statusOf(stored)
	if u.IsValid() && s.IsValid() && u.Type() == s.Type() && u.IsZero() {
		u.Set(s)
	}
	ud, ok1 := updated.(*Deployment)
	sd, ok2 := stored.(*Deployment)
	if ok1 && ok2 && ud.Status.isZero() {
		ud.Status = sd.Status
	}
	dd, uok := updated.(*Dependency)
	sdd, sok := stored.(*Dependency)
	if uok && sok && dd.Status.IsZero() {
		dd.Status = sdd.Status
	}
	un, _ := updated.(*Notify)
	sn, _ := stored.(*Notify)
	if un != nil && sn != nil && un.Status == (NotifyStatus{}) {
		un.Status = sn.Status
	}
}
