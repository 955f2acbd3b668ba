package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// ReviewAPIVersion is the version of the review berth sends (Kubernetes'
// AdmissionReview in its own group: a hook written for Kubernetes reads it as is).
const ReviewAPIVersion = "admission.berth.io/v1"

// Review is what is sent (Request) and what comes back (Response).
type Review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *Request  `json:"request,omitempty"`
	Response   *Response `json:"response,omitempty"`
}

// Request describes one write to a hook.
type Request struct {
	// UID is unique to the call; the answer must carry it back.
	UID         string `json:"uid"`
	Kind        string `json:"kind"`
	Operation   string `json:"operation"`
	SubResource string `json:"subResource,omitempty"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	// Object is the written object (none for a delete), OldObject the stored one (none
	// for a create).
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	UserInfo  UserInfo        `json:"userInfo"`
}

// UserInfo is who writes: the token's name and id and its policies, so that a hook can
// decide by the user's rights.
type UserInfo struct {
	Username   string `json:"username"`
	UID        string `json:"uid,omitempty"`
	Management bool   `json:"management,omitempty"`
	// Policies are the token's policies as stored (name and rules).
	Policies json.RawMessage `json:"policies,omitempty"`
}

// Response is a hook's answer.
type Response struct {
	UID     string  `json:"uid"`
	Allowed bool    `json:"allowed"`
	Status  *Status `json:"status,omitempty"`
	// PatchType is "JSONPatch" when Patch is given. Patch is the RFC 6902 patch,
	// base64 as Kubernetes sends it, or the JSON array itself.
	PatchType string          `json:"patchType,omitempty"`
	Patch     json.RawMessage `json:"patch,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
}

// Status is the reason of a denial.
type Status struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// DecodeResponse reads a hook's answer to the request uid: a review with a response
// carrying uid back.
func DecodeResponse(data []byte, uid string) (*Response, error) {
	var rv Review
	if err := json.Unmarshal(data, &rv); err != nil {
		return nil, fmt.Errorf("the answer is not an admission review: %w", err)
	}
	if rv.Response == nil {
		return nil, errors.New("the answer has no response")
	}
	if rv.Response.UID != uid {
		return nil, fmt.Errorf("the answer's response.uid %q is not the request's %q", truncate(rv.Response.UID, 64), uid)
	}
	return rv.Response, nil
}

// PatchOf is the response's patch as a JSON array: nil when there is none.
func (r *Response) PatchOf() ([]byte, error) {
	p := bytes.TrimSpace(r.Patch)
	if len(p) == 0 || string(p) == "null" {
		return nil, nil
	}
	if r.PatchType != "" && r.PatchType != "JSONPatch" {
		return nil, fmt.Errorf("patchType %q: only JSONPatch is applied", truncate(r.PatchType, 40))
	}
	if p[0] == '"' {
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return nil, fmt.Errorf("patch: %w", err)
		}
		dec, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("patch: not base64: %w", err)
		}
		p = bytes.TrimSpace(dec)
	}
	if len(p) == 0 || p[0] != '[' {
		return nil, errors.New("patch: not a JSON array of operations")
	}
	return p, nil
}

// MaxPatchOps bounds the operations of one patch.
const MaxPatchOps = 1000

// ForbiddenPatchError refuses a patch that renames or moves the object.
type ForbiddenPatchError struct {
	Field string // metadata.name, metadata.namespace, kind
	Op    string
}

func (e *ForbiddenPatchError) Error() string {
	return fmt.Sprintf("the patch's %s operation changes %s: a webhook may not rename or move an object", e.Op, e.Field)
}

// guarded are the paths a patch may not write, nor their parents.
var guarded = []struct{ ptr, field string }{
	{"/metadata/name", "metadata.name"},
	{"/metadata/namespace", "metadata.namespace"},
	{"/kind", "kind"},
	{"/apiVersion", "apiVersion"},
}

// ApplyPatch applies an RFC 6902 patch to doc. It refuses (ForbiddenPatchError) any
// operation that writes metadata.name, metadata.namespace, kind or apiVersion, or a
// parent of them; and checks after applying that they are unchanged, whatever path did
// it.
func ApplyPatch(doc, patch []byte) ([]byte, error) {
	id, err := identityOf(doc, "object")
	if err != nil {
		return nil, err
	}
	return applyPatch(doc, id, patch)
}

// applyPatch is ApplyPatch on doc whose identity is id (read once for a chain of
// patches: every patch of the chain keeps it).
func applyPatch(doc []byte, id identity, patch []byte) ([]byte, error) {
	// Decoded once: the guard reads the operations the library applies.
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	if len(p) > MaxPatchOps {
		return nil, fmt.Errorf("patch: %d operations, at most %d", len(p), MaxPatchOps)
	}
	for _, o := range p {
		op := o.Kind()
		if op == "test" {
			continue
		}
		// A path or from that is missing or not a string reads as "", the root's,
		// which the guard refuses.
		path, err := o.Path()
		if err != nil {
			path = ""
		}
		var from string
		if op == "move" {
			if from, err = o.From(); err != nil {
				from = ""
			}
		}
		for _, g := range guarded {
			if touches(path, g.ptr) || (op == "move" && touches(from, g.ptr)) {
				return nil, &ForbiddenPatchError{Field: g.field, Op: op}
			}
		}
	}
	out, err := p.ApplyWithOptions(doc, &jsonpatch.ApplyOptions{SupportNegativeIndices: false, AccumulatedCopySizeLimit: 4 << 20,
		AllowMissingPathOnRemove: false, EnsurePathExistsOnAdd: false})
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	if err := id.same(out); err != nil {
		return nil, err
	}
	return out, nil
}

// unescapePointer decodes a JSON pointer's "~1" and "~0" (RFC 6901).
var unescapePointer = strings.NewReplacer("~1", "/", "~0", "~")

// touches reports whether writing ptr writes guard: ptr is guard, a parent of it, or
// the root (JSON pointers; "~1" and "~0" decoded).
func touches(ptr, guard string) bool {
	ptr = unescapePointer.Replace(ptr)
	return ptr == "" || ptr == guard || strings.HasPrefix(guard, ptr+"/")
}

// identity is what names an object: no patch may change it.
type identity struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func identityOf(doc []byte, what string) (identity, error) {
	var id identity
	if err := json.Unmarshal(doc, &id); err != nil {
		return id, fmt.Errorf("%s: %w", what, err)
	}
	return id, nil
}

// same refuses a patched object whose identity is not id's.
func (id identity) same(after []byte) error {
	b, err := identityOf(after, "patched object")
	switch {
	case err != nil:
		return err
	case id.Metadata.Name != b.Metadata.Name:
		return &ForbiddenPatchError{Field: "metadata.name", Op: "patch"}
	case id.Metadata.Namespace != b.Metadata.Namespace:
		return &ForbiddenPatchError{Field: "metadata.namespace", Op: "patch"}
	case id.Kind != b.Kind:
		return &ForbiddenPatchError{Field: "kind", Op: "patch"}
	case id.APIVersion != b.APIVersion:
		return &ForbiddenPatchError{Field: "apiVersion", Op: "patch"}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// jsonEqual reports whether two JSON documents hold the same value (a patch that sets
// what is there already changes nothing, and calls no hook again).
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
