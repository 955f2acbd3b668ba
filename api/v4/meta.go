package v4

import "time"

// APIVersion is the only apiVersion berth accepts, as in BCS.
const APIVersion = "v4"

// DefaultNamespace is used when a spec leaves metadata.namespace empty (BCS behaviour).
const DefaultNamespace = "defaultGroup"

// TypeMeta names the schema of a document.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       Kind   `json:"kind"`
}

// GetKind returns the kind of the object.
func (t *TypeMeta) GetKind() Kind { return t.Kind }

// ObjectMeta is the metadata every object carries. ResourceVersion and
// CreationTimestamp are set by the store; values submitted by clients for
// CreationTimestamp are ignored, and ResourceVersion acts as a precondition on update.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp time.Time         `json:"creationTimestamp,omitzero"`
}

// Object is implemented by every top-level kind (as a pointer).
type Object interface {
	GetKind() Kind
	GetMeta() *ObjectMeta
}
