package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// ListFilter narrows a paged list on the server (docs/api.md, paged lists): Node and
// Owner ("{kind}/{name}") apply to task groups, Phase to the status phase.
type ListFilter struct {
	Node, Owner, Phase string
}

// pageLimit is the server's largest page.
const pageLimit = 500

// pageBody is a page of a list: the items, before their kind is decoded, and the token
// of the next page.
type pageBody struct {
	Items    []json.RawMessage `json:"items"`
	Continue string            `json:"continue,omitempty"`
}

// ListFiltered lists every object of kind in ns ("" for every namespace) that f
// accepts, reading the server's pages of up to 500: the server filters, so only the
// matching objects cross the network.
func (c *Client) ListFiltered(ctx context.Context, kind v4.Kind, ns string, f ListFilter) ([]v4.Object, error) {
	path, err := objectPath(kind, ns, "", "")
	if err != nil {
		return nil, err
	}
	q := url.Values{"limit": {strconv.Itoa(pageLimit)}}
	for k, v := range map[string]string{"node": f.Node, "owner": f.Owner, "phase": f.Phase} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out []v4.Object
	for {
		var body pageBody
		if err := c.doJSON(ctx, request{method: http.MethodGet, path: path, query: q}, &body); err != nil {
			return nil, err
		}
		base := len(out)
		for i, raw := range body.Items {
			obj, err := decodeObject(raw, kind)
			if err != nil {
				return nil, fmt.Errorf("list %s: item %d: %w", kind.Plural(), base+i, err)
			}
			out = append(out, obj)
		}
		if body.Continue == "" {
			return out, nil
		}
		q.Set("continue", body.Continue)
	}
}
