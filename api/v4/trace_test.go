package v4

import "testing"

// TestSameContentIgnoresTrace: the trace of the last change is not content; the rest of
// the annotations are, and the objects compared are left as they were.
func TestSameContentIgnoresTrace(t *testing.T) {
	withTrace := baseDependency()
	withTrace.Metadata.Annotations = map[string]string{TraceAnnotation: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 2026-11-27T12:00:00Z"}
	if !SameContent(withTrace, baseDependency()) {
		t.Error("an object differing only by its trace is not the same content")
	}
	if withTrace.Metadata.Annotations[TraceAnnotation] == "" {
		t.Error("SameContent removed the trace from the object")
	}
	other := baseDependency()
	other.Metadata.Annotations = map[string]string{TraceAnnotation: "x", "team": "a"}
	if SameContent(other, baseDependency()) {
		t.Error("another annotation is content")
	}
}
