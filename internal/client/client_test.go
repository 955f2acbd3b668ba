package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// fakeServer records the last request and answers with a fixed status and body.
type fakeServer struct {
	status      int
	body        string
	contentType string

	method, path, query, reqType string
	reqBody                      []byte
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.method, f.path, f.query = r.Method, r.URL.Path, r.URL.RawQuery
	f.reqType = r.Header.Get("Content-Type")
	f.reqBody, _ = io.ReadAll(r.Body)
	ct := f.contentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(f.status)
	io.WriteString(w, f.body)
}

func newFake(t *testing.T, status int, body string) (*fakeServer, *Client) {
	t.Helper()
	f := &fakeServer{status: status, body: body}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func TestParseServerURL(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "http://127.0.0.1:7470", want: "http://127.0.0.1:7470"},
		{in: "127.0.0.1:7470", want: "https://127.0.0.1:7470"},
		{in: "localhost:1/", want: "https://localhost:1"},
		{in: "https://berth.example.com/prefix/", want: "https://berth.example.com/prefix"},
		{in: " host:9 ", want: "https://host:9"},
		{in: "", wantErr: true},
		{in: "ftp://x", wantErr: true},
		{in: "http://", wantErr: true},
	}
	for _, tt := range tests {
		u, err := ParseServerURL(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseServerURL(%q) = %v, want error", tt.in, u)
			}
			continue
		}
		if err != nil || u.String() != tt.want {
			t.Errorf("ParseServerURL(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
		}
	}
}

func TestGetDecodesTypedObject(t *testing.T) {
	f, c := newFake(t, 200, `{"apiVersion":"v4","kind":"process","metadata":{"name":"gamesvc","namespace":"ns-a","resourceVersion":"7"},
		"spec":{"instance":2,"template":{"spec":{"processes":[{"procName":"game","startCmd":"./start"}]}}}}`)
	obj, err := c.Get(context.Background(), v4.KindProcess, "ns-a", "gamesvc")
	if err != nil {
		t.Fatal(err)
	}
	if f.method != "GET" || f.path != "/v1/namespaces/ns-a/processes/gamesvc" {
		t.Errorf("request = %s %s", f.method, f.path)
	}
	p, ok := obj.(*v4.Process)
	if !ok {
		t.Fatalf("got %T, want *v4.Process", obj)
	}
	if p.Spec.Instance != 2 || p.Metadata.ResourceVersion != "7" || p.Spec.Template.Spec.Processes[0].ProcName != "game" {
		t.Errorf("decoded %+v", p)
	}
}

func TestErrorDecoding(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		wantReason string
		wantText   string
	}{
		{
			name:   "invalid with details",
			status: 422,
			body: `{"error":{"code":422,"reason":"Invalid","message":"process ns-a/gamesvc is invalid: 2 problems",
				"details":[{"field":"spec.instance","message":"must be greater than 0"},{"field":"metadata.name","message":"must be lowercase"}]}}`,
			wantReason: "Invalid",
			wantText: "process ns-a/gamesvc is invalid: 2 problems\n" +
				"  - spec.instance: must be greater than 0\n" +
				"  - metadata.name: must be lowercase",
		},
		{
			name:       "not found",
			status:     404,
			body:       `{"error":{"code":404,"reason":"NotFound","message":"process ns-a/x not found"}}`,
			wantReason: "NotFound",
			wantText:   "process ns-a/x not found",
		},
		{
			name:       "not berth json",
			status:     502,
			body:       "<html>bad gateway</html>",
			wantReason: "Bad Gateway",
			wantText:   "server answered 502 Bad Gateway: <html>bad gateway</html>",
		},
		{
			name:       "empty body, reason from status",
			status:     409,
			wantReason: "Conflict",
			wantText:   "server answered 409 Conflict",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFake(t, tt.status, tt.body)
			_, err := c.Get(context.Background(), v4.KindProcess, "ns-a", "x")
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if ae.Status != tt.status || ae.Reason != tt.wantReason {
				t.Errorf("status, reason = %d %q", ae.Status, ae.Reason)
			}
			if got := ae.Error(); got != tt.wantText {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tt.wantText)
			}
			if StatusOf(err) != tt.status {
				t.Errorf("StatusOf = %d", StatusOf(err))
			}
		})
	}
}

func TestListPaths(t *testing.T) {
	body := `{"kind":"List","resourceVersion":"42","items":[
		{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a","namespace":"n1"},"datas":{}},
		{"apiVersion":"v4","kind":"configmap","metadata":{"name":"b","namespace":"n2"},"datas":{}}]}`
	for _, tt := range []struct{ ns, path string }{
		{"", "/v1/configmaps"},
		{"n1", "/v1/namespaces/n1/configmaps"},
	} {
		f, c := newFake(t, 200, body)
		list, err := c.List(context.Background(), v4.KindConfigMap, tt.ns)
		if err != nil {
			t.Fatal(err)
		}
		if f.path != tt.path {
			t.Errorf("ns %q: path %s, want %s", tt.ns, f.path, tt.path)
		}
		if list.ResourceVersion != "42" || len(list.Items) != 2 {
			t.Fatalf("list = %+v", list)
		}
		if _, ok := list.Items[1].(*v4.ConfigMap); !ok || list.Items[1].GetMeta().Name != "b" {
			t.Errorf("item 1 = %#v", list.Items[1])
		}
	}
}

func TestWriteCalls(t *testing.T) {
	obj := &v4.ConfigMap{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindConfigMap},
		Metadata: v4.ObjectMeta{Name: "cfg", ResourceVersion: "3"}}
	answer := `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"cfg","namespace":"defaultGroup","resourceVersion":"4"},"datas":{}}`
	tests := []struct {
		name, method, path, query string
		call                      func(*Client) (v4.Object, error)
	}{
		{"create", "POST", "/v1/namespaces/defaultGroup/configmaps", "",
			func(c *Client) (v4.Object, error) { return c.Create(context.Background(), obj) }},
		{"update", "PUT", "/v1/namespaces/defaultGroup/configmaps/cfg", "",
			func(c *Client) (v4.Object, error) { return c.Update(context.Background(), obj) }},
		{"delete", "DELETE", "/v1/namespaces/defaultGroup/configmaps/cfg", "resourceVersion=3",
			func(c *Client) (v4.Object, error) {
				return c.Delete(context.Background(), v4.KindConfigMap, "defaultGroup", "cfg", WithPrecondition("3"))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFake(t, 200, answer)
			got, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if f.method != tt.method || f.path != tt.path || f.query != tt.query {
				t.Errorf("request = %s %s?%s", f.method, f.path, f.query)
			}
			if tt.method != "DELETE" && (f.reqType != "application/json" || !strings.Contains(string(f.reqBody), `"name":"cfg"`)) {
				t.Errorf("body %s (%s)", f.reqBody, f.reqType)
			}
			if got.GetMeta().ResourceVersion != "4" {
				t.Errorf("answer not decoded: %+v", got.GetMeta())
			}
		})
	}
}

func TestUpdateThatStartsAnOperation(t *testing.T) {
	obj := &v4.Deployment{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindDeployment}, Metadata: v4.ObjectMeta{Name: "web"}}
	_, c := newFake(t, 202, `{"object":{"apiVersion":"v4","kind":"deployment","metadata":{"name":"web","namespace":"defaultGroup","resourceVersion":"9"},"spec":{"instance":3,"strategy":{"type":"RollingUpdate"}}},
		"operation":{"type":"rollout","kind":"deployment","name":"defaultGroup/web"},"watch":"/v1/namespaces/defaultGroup/deployments?name=web&watch=true"}`)
	got, err := c.Update(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := got.(*v4.Deployment); !ok || d.Metadata.ResourceVersion != "9" || d.Spec.Instance != 3 {
		t.Fatalf("the object of a 202 answer: %#v", got)
	}
}

func TestDefinition(t *testing.T) {
	f, c := newFake(t, 200, "kind: process\nmetadata: {name: x}\n")
	f.contentType = "application/yaml"
	data, ct, err := c.Definition(context.Background(), v4.KindProcess, "defaultGroup", "x")
	if err != nil {
		t.Fatal(err)
	}
	if f.path != "/v1/namespaces/defaultGroup/processes/x/definition" || ct != "application/yaml" || string(data) != f.body {
		t.Errorf("path %s, ct %s, data %q", f.path, ct, data)
	}
}

func TestApply(t *testing.T) {
	f, c := newFake(t, 200, `{"results":[
		{"kind":"process","namespace":"ns-a","name":"gamesvc","action":"created","resourceVersion":"17"},
		{"kind":"configmap","namespace":"defaultGroup","name":"cfg","action":"unchanged","resourceVersion":"12"}]}`)
	stream := "---\nkind: process\n---\nkind: configmap\n"
	res, err := c.Apply(context.Background(), []byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if f.method != "POST" || f.path != "/v1/apply" || string(f.reqBody) != stream || f.reqType != "application/yaml" {
		t.Errorf("request %s %s %s %q", f.method, f.path, f.reqType, f.reqBody)
	}
	want := v4.ApplyResult{Kind: v4.KindProcess, Namespace: "ns-a", Name: "gamesvc", Action: v4.ActionCreated, ResourceVersion: "17"}
	if len(res) != 2 || !reflect.DeepEqual(res[0], want) || res[1].Action != v4.ActionUnchanged {
		t.Errorf("results = %+v", res)
	}
}

func TestApplyInvalid(t *testing.T) {
	_, c := newFake(t, 422, `{"error":{"code":422,"reason":"Invalid","message":"2 documents are invalid",
		"details":[{"field":"documents[1].spec.instance","message":"must be greater than 0"}]}}`)
	_, err := c.Apply(context.Background(), []byte(`{"kind":"process"}`))
	var ae *APIError
	if !errors.As(err, &ae) || !IsInvalid(err) || len(ae.Details) != 1 || ae.Details[0].Field != "documents[1].spec.instance" {
		t.Fatalf("err = %#v", err)
	}
}

func TestContentTypeOf(t *testing.T) {
	for in, want := range map[string]string{
		"  \n{\"a\":1}": "application/json",
		"[{}]":          "application/json",
		"a: 1":          "application/yaml",
		"":              "application/yaml",
	} {
		if got := contentTypeOf([]byte(in)); got != want {
			t.Errorf("contentTypeOf(%q) = %s", in, got)
		}
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more: connections are refused
	c, err := New(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.List(ctx, v4.KindProcess, "")
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want *UnreachableError", err, err)
	}
	for _, want := range []string{"https://" + addr, "is the server running?", "berth dev", "BERTH_SERVER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestContextTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	c, _ := New(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Get(ctx, v4.KindProcess, "ns", "x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

// Each Warning header of an answer, success or error, reaches the warning handler as its
// text.
func TestWarningHandler(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{`299 berth "updatePolicy is ignored by berth (BCS parsed it and never used it)"`, "updatePolicy is ignored by berth (BCS parsed it and never used it)"},
		{`299 berth "key \"caf\u00e9\" is ignored"`, `key "café" is ignored`},
		{`299 - unquoted text`, `299 - unquoted text`},
	} {
		if got := warningText(tc.header); got != tc.want {
			t.Errorf("warningText(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Warning", `299 berth "a"`)
		w.Header().Add("Warning", `299 berth "b"`)
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"error":{"code":422,"reason":"Invalid","message":"bad"}}`)
	}))
	defer srv.Close()
	var got []string
	c, err := New(srv.URL, WithHTTPClient(srv.Client()), WithWarningHandler(func(s string) { got = append(got, s) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(context.Background(), []byte("kind: process\n")); err == nil {
		t.Fatal("a 422 answer was taken as success")
	}
	if strings.Join(got, ",") != "a,b" {
		t.Errorf("warnings %q, want a, b", got)
	}
}
