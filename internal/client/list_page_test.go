package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// ListFiltered sends the filters with every page, follows the continue tokens and
// decodes the items of every page; a page that fails ends it with the error.
func TestListFiltered(t *testing.T) {
	tg := func(name string) string {
		return `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"node":"n1","template":{"spec":{}}}}`
	}
	for _, c := range []struct {
		name    string
		pages   map[string]string // by continue token ("" first)
		status  int
		f       ListFilter
		ns      string
		want    []string
		wantErr string
		query   string // of the first request
		path    string
	}{
		{name: "two pages", f: ListFilter{Node: "n1"}, path: "/v1/taskgroups", query: "limit=500&node=n1",
			pages: map[string]string{"": `{"kind":"List","continue":"c2","items":[` + tg("a") + `,` + tg("b") + `]}`,
				"c2": `{"kind":"List","items":[` + tg("c") + `]}`},
			want: []string{"a", "b", "c"}},
		{name: "every filter, one namespace", f: ListFilter{Node: "n1", Owner: "process/web", Phase: "Running"}, ns: "ns",
			path: "/v1/namespaces/ns/taskgroups", query: "limit=500&node=n1&owner=process%2Fweb&phase=Running",
			pages: map[string]string{"": `{"kind":"List","items":[]}`}},
		{name: "a bad item", path: "/v1/taskgroups", query: "limit=500",
			pages:   map[string]string{"": `{"kind":"List","continue":"c2","items":[` + tg("a") + `]}`, "c2": `{"kind":"List","items":[{"kind":"no-such-kind"}]}`},
			wantErr: "list taskgroups: item 1"},
		{name: "forbidden", status: http.StatusForbidden, path: "/v1/taskgroups", query: "limit=500"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var queries []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
				if c.status != 0 {
					w.WriteHeader(c.status)
					io.WriteString(w, `{"error":{"code":403,"reason":"Forbidden","message":"no"}}`)
					return
				}
				body, ok := c.pages[r.URL.Query().Get("continue")]
				if !ok {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				io.WriteString(w, body)
			}))
			t.Cleanup(srv.Close)
			cl, err := New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := cl.ListFiltered(context.Background(), v4.KindTaskGroup, c.ns, c.f)
			if len(queries) == 0 || queries[0] != c.path+"?"+c.query {
				t.Errorf("requests %v, want first %s?%s", queries, c.path, c.query)
			}
			if c.status != 0 {
				if StatusOf(err) != c.status {
					t.Fatalf("err = %v, want status %d", err, c.status)
				}
				return
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetMeta().Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("names %v, want %v", got, c.want)
			}
		})
	}
}
