// Package customres reads custom resource definitions and custom resources (docs/api.md,
// "Custom resources"): the free-form documents BCS's clients keep beside the workloads.
// berth stores them as documents of their own, not as kinds of api/v4, so each is bounded
// here: its size, its depth and the length of its keys, and the names that become store
// keys are DNS labels.
package customres

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Bounds of one document and of the definitions a cluster holds.
const (
	// MaxBytes is the largest document, as sent.
	MaxBytes = 64 << 10
	// MaxDepth is how deeply a document's objects and arrays may nest.
	MaxDepth = 32
	// MaxKeyBytes is the longest key of any object in a document (Kubernetes' longest
	// label or annotation key is 253 + 1 + 63).
	MaxKeyBytes = 317
	// MaxDefinitions is how many definitions a cluster holds.
	MaxDefinitions = 100
)

// DefinitionKind is the kind of a definition document.
const DefinitionKind = "CustomResourceDefinition"

// definitionAPIVersions are the apiVersions a definition may have: BCS's client sends
// "v4" (it refuses any other), Kubernetes' own tools the apiextensions group.
var definitionAPIVersions = []string{"v4", "apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1", ""}

// Definition is what berth reads of a definition: the names its resources go by.
type Definition struct {
	// Name is the definition's metadata.name, Plural + "." + Group.
	Name     string
	Group    string
	Version  string
	Plural   string
	Singular string
	Kind     string
}

// APIVersion is what the definition's resources carry as their apiVersion.
func (d Definition) APIVersion() string { return d.Group + "/" + d.Version }

// Doc is a decoded JSON document.
type Doc = map[string]any

// InvalidError says which field of a document is wrong; the API answers it with 422.
type InvalidError struct {
	Field, Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrUnreadable marks a body that is not one bounded JSON object (400).
var ErrUnreadable = errors.New("unreadable document")

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	kindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// CheckName reports whether s may name a custom resource or be a definition's plural or
// singular: a DNS label (RFC 1123), which never holds a "/" of the store's keys.
func CheckName(field, s string) error {
	if s == "" {
		return invalid(field, "is required")
	}
	if len(s) > 63 || !dnsLabel.MatchString(s) {
		return invalid(field, "%q is not a DNS label (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)", truncate(s))
	}
	return nil
}

// checkGroup accepts a DNS subdomain: dot-separated DNS labels, at most 253 bytes.
func checkGroup(field, s string) error {
	if s == "" {
		return invalid(field, "is required")
	}
	if len(s) > 253 {
		return invalid(field, "is longer than 253 bytes")
	}
	for _, l := range strings.Split(s, ".") {
		if len(l) > 63 || !dnsLabel.MatchString(l) {
			return invalid(field, "%q is not a DNS subdomain (lowercase DNS labels joined by '.')", truncate(s))
		}
	}
	return nil
}

// CheckDefinitionName accepts a definition's name as a path gives it: plural.group.
func CheckDefinitionName(name string) error {
	plural, group, ok := strings.Cut(name, ".")
	if !ok {
		return invalid("metadata.name", "%q is not <plural>.<group>", truncate(name))
	}
	if err := CheckName("metadata.name", plural); err != nil {
		return err
	}
	return checkGroup("metadata.name", group)
}

// decode reads body as one JSON object within the bounds.
func decode(body []byte) (Doc, error) {
	if len(body) > MaxBytes {
		return nil, invalid("body", "is %d bytes, more than the %d a custom resource may hold", len(body), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc Doc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %v", ErrUnreadable, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrUnreadable)
	}
	if doc == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrUnreadable)
	}
	if err := checkShape(doc, "", 1); err != nil {
		return nil, err
	}
	return doc, nil
}

// checkShape bounds the nesting and the keys below v.
func checkShape(v any, path string, depth int) error {
	if depth > MaxDepth {
		return invalid(path, "nests deeper than %d levels", MaxDepth)
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if len(k) > MaxKeyBytes {
				return invalid(path, "has a key of %d bytes, more than %d", len(k), MaxKeyBytes)
			}
			if err := checkShape(e, join(path, k), depth+1); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range t {
			if err := checkShape(e, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return truncate(key)
	}
	return path + "." + truncate(key)
}

// truncate keeps an echoed value short.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// str reads the string at keys below doc; a value of another type is invalid.
func str(doc Doc, keys ...string) (string, error) {
	var cur any = doc
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", invalid(strings.Join(keys[:i], "."), "must be an object")
		}
		if cur, ok = m[k]; !ok || cur == nil {
			return "", nil
		}
	}
	s, ok := cur.(string)
	if !ok {
		return "", invalid(strings.Join(keys, "."), "must be a string")
	}
	return s, nil
}

// metadata returns doc's metadata object, made when missing.
func metadata(doc Doc) (map[string]any, error) {
	switch m := doc["metadata"].(type) {
	case map[string]any:
		return m, nil
	case nil:
		made := map[string]any{}
		doc["metadata"] = made
		return made, nil
	}
	return nil, invalid("metadata", "must be an object")
}

// serverFields are the metadata berth sets on every stored document; what a client sends
// for them is dropped (BCS's client sends back what it read).
var serverFields = []string{"resourceVersion", "uid", "creationTimestamp", "selfLink", "generation"}

// Stamp sets the metadata berth keeps: the namespace (none for a definition), the time
// of creation and a uid, and drops what the client sent for the others.
func Stamp(doc Doc, namespace, created, uid string) {
	m, _ := metadata(doc)
	for _, f := range serverFields {
		delete(m, f)
	}
	if namespace != "" {
		m["namespace"] = namespace
	}
	m["creationTimestamp"] = created
	m["uid"] = uid
}

// Carry copies the creation time and uid of the stored document to its replacement.
func Carry(doc, stored Doc) {
	m, _ := metadata(doc)
	old, _ := metadata(stored)
	for _, f := range serverFields {
		delete(m, f)
	}
	for _, f := range []string{"creationTimestamp", "uid"} {
		if v, ok := old[f]; ok {
			m[f] = v
		}
	}
}

// Decode reads a stored document and sets its resourceVersion.
func Decode(val []byte, resourceVersion string) (Doc, error) {
	var doc Doc
	dec := json.NewDecoder(bytes.NewReader(val))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode a stored custom resource: %w", err)
	}
	if m, err := metadata(doc); err == nil {
		m["resourceVersion"] = resourceVersion
	}
	return doc, nil
}
