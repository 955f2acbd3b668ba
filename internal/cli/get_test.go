package cli

import (
	"strings"
	"testing"
)

const procList = `{"kind":"List","resourceVersion":"30","items":[
 {"apiVersion":"v4","kind":"process","metadata":{"name":"gamesvc","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:55:00Z"},
  "spec":{"instance":3,"template":{"spec":{"processes":[{"procName":"game","startCmd":"./s"},{"procName":"agent","startCmd":"./a"}]}}}},
 {"apiVersion":"v4","kind":"process","metadata":{"name":"login-long-name","namespace":"ns-a","creationTimestamp":"2026-11-20T09:00:00Z"},
  "spec":{"instance":10,"template":{"spec":{"processes":[{"procName":"login","startCmd":"./l"}]}}}}]}`

func TestGetTables(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/processes", 200, procList)
	api.json("GET /v1/namespaces/defaultGroup/processes", 200, procList)
	api.json("GET /v1/namespaces/ns-a/services", 200, `{"kind":"List","items":[
		{"apiVersion":"v4","kind":"service","metadata":{"name":"web","namespace":"ns-a","creationTimestamp":"2026-11-22T11:59:15Z"},
		 "spec":{"selector":{"tier":"fe","app":"web"},"ports":[{"name":"http","protocol":"TCP","servicePort":80},{"name":"grpc","protocol":"TCP","servicePort":9090}]}}]}`)
	api.json("GET /v1/namespaces/defaultGroup/configmaps", 200, `{"kind":"List","items":[
		{"apiVersion":"v4","kind":"configmap","metadata":{"name":"cfg","namespace":"defaultGroup"},
		 "datas":{"a":{"type":"file","content":"eA=="},"b":{"type":"file","content":"eQ=="}}}]}`)
	api.json("GET /v1/namespaces/defaultGroup/applications", 200, `{"kind":"List","items":[
		{"apiVersion":"v4","kind":"application","metadata":{"name":"nginx","namespace":"defaultGroup","creationTimestamp":"2026-11-22T09:00:00Z"},
		 "spec":{"instance":1,"template":{"spec":{"containers":[{"image":"nginx:1.27"},{"image":"busybox"}]}}}}]}`)
	api.json("GET /v1/namespaces/defaultGroup/deployments", 200, `{"kind":"List","items":[
		{"apiVersion":"v4","kind":"deployment","metadata":{"name":"d1","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:59:58Z"},
		 "spec":{"instance":2,"strategy":{"type":"RollingUpdate"}}}]}`)
	api.json("GET /v1/namespaces/defaultGroup/daemonsets", 200, `{"kind":"List","items":[
		{"apiVersion":"v4","kind":"daemonset","metadata":{"name":"logs","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:00:00Z"},
		 "spec":{"template":{"spec":{"processes":[{"procName":"shipper","startCmd":"./s"}]}}},
		 "status":{"phase":"Deploying","desired":3,"current":3,"running":2,"upToDate":1}}]}`)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all namespaces", []string{"get", "procs", "-A"}, `
			NAMESPACE      NAME              STATUS   RUNNING   PROCESSES    AGE
			defaultGroup   gamesvc           <none>   0/3       game,agent   5m
			ns-a           login-long-name   <none>   0/10      login        2d3h
			`},
		{"one namespace", []string{"get", "process"}, `
			NAME              STATUS   RUNNING   PROCESSES    AGE
			gamesvc           <none>   0/3       game,agent   5m
			login-long-name   <none>   0/10      login        2d3h
			`},
		{"service", []string{"get", "svc", "-n", "ns-a"}, `
			NAME   SELECTOR          PORTS                       AGE
			web    app=web,tier=fe   http:80/TCP,grpc:9090/TCP   45s
			`},
		{"configmap without timestamp", []string{"get", "cm"}, `
			NAME   DATA   AGE
			cfg    2      <unknown>
			`},
		{"application", []string{"get", "apps"}, `
			NAME    STATUS   RUNNING   IMAGES               AGE
			nginx   <none>   0/1       nginx:1.27,busybox   3h
			`},
		{"deployment", []string{"get", "deploy"}, `
			NAME   STATUS   REVISION   UPDATED   AVAILABLE   STRATEGY        AGE
			d1     <none>   <none>     0/2       0/2         RollingUpdate   2s
			`},
		{"daemonset", []string{"get", "ds"}, `
			NAME   STATUS      DESIRED   RUNNING   UP-TO-DATE   TASKS     AGE
			logs   Deploying   3         2         1            shipper   60m
			`},
		{"names", []string{"get", "procs", "-o", "name"}, `
			process/gamesvc
			process/login-long-name
			`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLIOK(t, url, "", tt.args...)
			if want := dedent(tt.want); r.stdout != want {
				t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
			}
		})
	}
}

func TestGetStructured(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/processes", 200, procList)
	api.json("GET /v1/namespaces/defaultGroup/processes/gamesvc", 200,
		`{"apiVersion":"v4","kind":"process","metadata":{"name":"gamesvc","namespace":"defaultGroup"},"spec":{"instance":3,"template":{"spec":{}}}}`)

	r := runCLI(t, url, "", "get", "procs", "-o", "json")
	if r.err != nil || !strings.HasPrefix(r.stdout, "{\n  \"kind\": \"List\",\n  \"items\": [\n    {\n      \"apiVersion\": \"v4\",") {
		t.Errorf("list json: %v\n%s", r.err, r.stdout)
	}
	r = runCLI(t, url, "", "get", "process", "gamesvc", "-o", "yaml")
	if r.err != nil || !strings.HasPrefix(r.stdout, "apiVersion: v4\nkind: process\nmetadata:\n  name: gamesvc\n") {
		t.Errorf("object yaml: %v\n%s", r.err, r.stdout)
	}
	r = runCLI(t, url, "", "get", "process", "gamesvc", "-o", "json")
	if r.err != nil || !strings.HasPrefix(r.stdout, "{\n  \"apiVersion\": \"v4\",\n  \"kind\": \"process\"") {
		t.Errorf("object json: %v\n%s", r.err, r.stdout)
	}
}

func TestGetDefinition(t *testing.T) {
	api, url := newFakeAPI(t)
	api.routes["GET /v1/namespaces/ns-a/processes/gamesvc/definition"] = func(w httpResponseWriter, _ *httpRequest) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write([]byte("kind: process # as submitted"))
	}
	r := runCLI(t, url, "", "get", "proc", "gamesvc", "-n", "ns-a", "--definition")
	if r.err != nil || r.stdout != "kind: process # as submitted\n" {
		t.Errorf("%v %q", r.err, r.stdout)
	}
}

func TestGetErrors(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/processes/x", 404, `{"error":{"code":404,"reason":"NotFound","message":"process defaultGroup/x not found"}}`)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "process", "x"}, "process defaultGroup/x not found"},
		{[]string{"get", "pods"}, `unknown kind "pods"`},
		{[]string{"get", "process", "x", "-A"}, "use -n instead of -A"},
		{[]string{"get", "process", "--definition"}, "--definition needs a NAME"},
		{[]string{"get", "process", "-o", "wide"}, "unknown output format"},
		{[]string{"get"}, "accepts between 1 and 2 arg(s)"},
	}
	for _, tt := range tests {
		r := runCLI(t, url, "", tt.args...)
		if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want %q", tt.args, r.err, tt.want)
		}
	}
}

func TestGetWatch(t *testing.T) {
	api, url := newFakeAPI(t)
	obj := func(name string) string {
		return `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"` + name + `","namespace":"defaultGroup","creationTimestamp":"2026-11-22T11:59:00Z"},"datas":{}}`
	}
	api.stream("GET /v1/namespaces/defaultGroup/configmaps",
		`{"type":"ADDED","object":`+obj("a")+`}`,
		`{"type":"ADDED","object":`+obj("other")+`}`,
		`{"type":"MODIFIED","object":`+obj("a")+`}`,
		`{"type":"DELETED","object":`+obj("a")+`}`)
	r := runCLI(t, url, "", "get", "cm", "a", "-w")
	if r.err == nil || !strings.Contains(r.err.Error(), "server closed the stream") {
		t.Errorf("err = %v", r.err)
	}
	want := dedent(`
		EVENT      NAME   DATA   AGE
		ADDED      a      0      60s
		MODIFIED   a      0      60s
		DELETED    a      0      60s
		`)
	if r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
	if got := api.got(); len(got) != 1 || got[0] != "GET /v1/namespaces/defaultGroup/configmaps?watch=true" {
		t.Errorf("requests = %v", got)
	}
}
