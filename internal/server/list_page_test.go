package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

type pageResponse struct {
	Items []struct {
		Metadata v4.ObjectMeta `json:"metadata"`
	} `json:"items"`
	Continue string `json:"continue"`
	Total    *int64 `json:"total"`
}

// TestListPages: limit and continue page a list; q filters by name; bad parameters are
// 400s naming the parameter; a list without them is whole, as before.
func TestListPages(t *testing.T) {
	base := newTestServer(t, Config{})
	for i := range 12 {
		wantStatus(t, call(t, "POST", base+"/v1/namespaces/pages/configmaps", cmJSON("pages", fmt.Sprintf("cm-%02d", i), "eA==")), http.StatusCreated)
	}
	get := func(query string) pageResponse {
		t.Helper()
		r := call(t, "GET", base+"/v1/namespaces/pages/configmaps?"+query, "")
		wantStatus(t, r, http.StatusOK)
		var p pageResponse
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	names := func(p pageResponse) string {
		var n []string
		for _, it := range p.Items {
			n = append(n, it.Metadata.Name)
		}
		return strings.Join(n, ",")
	}
	first := get("limit=5")
	if names(first) != "cm-00,cm-01,cm-02,cm-03,cm-04" || first.Continue == "" || first.Total == nil || *first.Total != 12 {
		t.Fatalf("first page: %s %q %v", names(first), first.Continue, first.Total)
	}
	second := get("limit=5&continue=" + url.QueryEscape(first.Continue))
	if names(second) != "cm-05,cm-06,cm-07,cm-08,cm-09" {
		t.Errorf("second page: %s", names(second))
	}
	if f := get("q=CM-1&limit=10"); names(f) != "cm-10,cm-11" || f.Total != nil {
		t.Errorf("filtered: %s total %v", names(f), f.Total)
	}
	if all := get(""); len(all.Items) != 12 || all.Continue != "" {
		t.Errorf("whole list: %d items", len(all.Items))
	}
	if none := get("q=nothing"); none.Items == nil || len(none.Items) != 0 {
		t.Errorf("no match: %+v", none)
	}
	for query, want := range map[string]string{
		"limit=0":                       "limit",
		"limit=501":                     "limit",
		"limit=x":                       "limit",
		"continue=bogus":                "continue token",
		"node=n1":                       "node filters task groups only",
		"q=" + strings.Repeat("a", 300): "q is longer",
		"continue=" + url.QueryEscape(first.Continue[:len(first.Continue)-2]): "continue token",
	} {
		r := call(t, "GET", base+"/v1/namespaces/pages/configmaps?"+query, "")
		if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), want) {
			t.Errorf("%.40s: %d %s, want 400 naming %q", query, r.code, r.body, want)
		}
	}
	r := call(t, "GET", base+"/v1/namespaces/pages/taskgroups?owner=bad", "")
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "owner") {
		t.Errorf("bad owner: %d %s", r.code, r.body)
	}
}
