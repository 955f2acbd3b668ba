package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// listConditions are the conditions of a storage list that berth reads: bcs-client sends
// them as a JSON object of strings in the body (values comma-separated), other clients
// as query parameters.
type listConditions struct {
	namespaces []string // none: every namespace the caller may read
	names      []string // none: every name
	offset     int
	limit      int
	ignored    []string
}

func readConditions(r *http.Request) (listConditions, *failure) {
	all := map[string]string{}
	if body := v1call.Body(r); len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &all); err != nil {
			return listConditions{}, &failure{code: CodeJSONDecode, message: "the conditions are not a JSON object of strings: " + err.Error()}
		}
		if all == nil { // the body was null
			all = map[string]string{}
		}
	}
	for k, v := range r.URL.Query() {
		all[k] = strings.Join(v, ",")
	}
	c := listConditions{limit: storageMaxLimit}
	for k, v := range all {
		switch k {
		case "namespace":
			c.namespaces = splitList(v)
		case "name", "resourceName":
			c.names = splitList(v)
		case "offset", "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (k == "limit" && (n == 0 || n > storageMaxLimit)) {
				return listConditions{}, &failure{code: CodeBadRequestData,
					message: fmt.Sprintf("%s %q: want a whole number, limit from 1 to %d", k, v, storageMaxLimit)}
			}
			if k == "offset" {
				c.offset = n
			} else {
				c.limit = n
			}
		default:
			c.ignored = append(c.ignored, k)
		}
	}
	slices.Sort(c.ignored)
	return c, nil
}

func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// storageList answers a page of the type's objects in the asked namespaces, or in every
// namespace the caller may read, in namespace then /v1 order. One namespace's list is
// read at a time and only the page is kept.
func (h *Handler) storageList(w http.ResponseWriter, r *http.Request) {
	t, typ, f := h.storageRoute(r)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	c, f := readConditions(r)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	var warnings []string
	if len(c.ignored) > 0 {
		warnings = append(warnings, v1call.Warning("conditions berth does not filter by were ignored: "+strings.Join(c.ignored, ", ")))
	}
	namespaces, every := c.namespaces, len(c.namespaces) == 0
	if every {
		list, a := v1call.Get[v4.NamespaceList](h.v1, r, "/v1/namespaces")
		if a != nil {
			writeFailure(w, failureOf(*a, false))
			return
		}
		namespaces = list.Items
	}
	out, skip, more := []storageItem{}, c.offset, false
	for _, ns := range namespaces {
		items, f := t.list(h, r, ns)
		if f != nil {
			if every && f.status == http.StatusForbidden {
				// The caller reads something in ns, not this type: not theirs to list.
				continue
			}
			writeFailure(w, *f)
			return
		}
		for i := range items {
			if len(c.names) > 0 && !slices.Contains(c.names, items[i].ResourceName) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if len(out) == c.limit {
				more = true
				break
			}
			h.finishItem(r, &items[i], typ)
			out = append(out, items[i])
		}
		if more {
			break
		}
	}
	if more {
		warnings = append(warnings, v1call.Warning(fmt.Sprintf("the list stops at %d items; ask again with offset=%d for the next ones", c.limit, c.offset+c.limit)))
	}
	writeSuccess(w, out, warnings)
}
