package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// ObjectList is a list answer: the objects, sorted by namespace then name, and the
// revision of the read (a watch started from it misses nothing).
type ObjectList struct {
	ResourceVersion string
	Items           []v4.Object
}

// listBody is a List answer read before its items are decoded into their kind.
type listBody = v4.List[json.RawMessage]

// Get returns one object.
func (c *Client) Get(ctx context.Context, kind v4.Kind, ns, name string) (v4.Object, error) {
	path, err := objectPath(kind, ns, name, "")
	if err != nil {
		return nil, err
	}
	return c.objectCall(ctx, request{method: http.MethodGet, path: path}, kind)
}

// List returns the objects of a kind in namespace ns, or in every namespace when ns is "".
func (c *Client) List(ctx context.Context, kind v4.Kind, ns string) (*ObjectList, error) {
	path, err := objectPath(kind, ns, "", "")
	if err != nil {
		return nil, err
	}
	return c.listPath(ctx, path, kind)
}

// listPath lists the objects of kind at path.
func (c *Client) listPath(ctx context.Context, path string, kind v4.Kind) (*ObjectList, error) {
	var body listBody
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, &body); err != nil {
		return nil, err
	}
	out := &ObjectList{ResourceVersion: body.ResourceVersion, Items: make([]v4.Object, 0, len(body.Items))}
	for i, raw := range body.Items {
		obj, err := decodeObject(raw, kind)
		if err != nil {
			return nil, fmt.Errorf("list %s: item %d: %w", kind.Plural(), i, err)
		}
		out.Items = append(out.Items, obj)
	}
	return out, nil
}

// Create stores a new object (409 when it exists) and returns it as stored.
func (c *Client) Create(ctx context.Context, obj v4.Object) (v4.Object, error) {
	return c.writeObject(ctx, http.MethodPost, obj, "")
}

// Update replaces an object. When obj carries metadata.resourceVersion, the server
// refuses the write with 409 if the stored object has changed since.
func (c *Client) Update(ctx context.Context, obj v4.Object) (v4.Object, error) {
	return c.writeObject(ctx, http.MethodPut, obj, obj.GetMeta().Name)
}

// writeObject sends obj to the path of its kind in its namespace, with name ("" for the
// collection), and returns the object as stored.
func (c *Client) writeObject(ctx context.Context, method string, obj v4.Object, name string) (v4.Object, error) {
	m := obj.GetMeta()
	path, err := objectPath(obj.GetKind(), nsOrDefault(m.Namespace), name, "")
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", obj.GetKind(), m.Name, err)
	}
	return c.objectCall(ctx, request{method: method, path: path, body: body}, obj.GetKind())
}

// DeleteOption tunes Delete.
type DeleteOption func(url.Values)

// WithPrecondition makes Delete fail with 409 unless the stored object is at revision rv.
func WithPrecondition(rv string) DeleteOption {
	return func(q url.Values) { q.Set("resourceVersion", rv) }
}

// WithForce deletes a dependency even while task groups use it (its pods are stopped).
func WithForce() DeleteOption {
	return func(q url.Values) { q.Set("force", "true") }
}

// Delete removes an object and returns its last stored state.
func (c *Client) Delete(ctx context.Context, kind v4.Kind, ns, name string, opts ...DeleteOption) (v4.Object, error) {
	path, err := objectPath(kind, ns, name, "")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	return c.objectCall(ctx, request{method: http.MethodDelete, path: path, query: q}, kind)
}

// Definition returns the document of an object exactly as it was submitted, with its
// content type (application/json or application/yaml).
func (c *Client) Definition(ctx context.Context, kind v4.Kind, ns, name string) ([]byte, string, error) {
	path, err := objectPath(kind, ns, name, "definition")
	if err != nil {
		return nil, "", err
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("read definition of %s %s/%s: %w", kind, ns, name, err)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// objectCall sends r and decodes a single-object answer, or the object of a 202 answer
// (an update that started an operation, such as a deployment's rollout).
func (c *Client) objectCall(ctx context.Context, r request, kind v4.Kind) (v4.Object, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode == http.StatusAccepted {
		var acc v4.Accepted
		if err := json.Unmarshal(raw, &acc); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", r.method, r.path, err)
		}
		raw = acc.Object
	}
	return decodeObject(raw, kind)
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return v4.DefaultNamespace
	}
	return ns
}
