package cli

import (
	"strings"
	"testing"
)

func TestDelete(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": "apiVersion: v4\nkind: process\nmetadata:\n  name: gamesvc\n---\nkind: cm\nmetadata: {name: cfg, namespace: ns-a}\n",
		"b.json": `{"kind":"service","metadata":{"name":"gone"}}`,
	})
	ok := func(kind string) string { return `{"apiVersion":"v4","kind":"` + kind + `","metadata":{"name":"x"}}` }
	notFound := `{"error":{"code":404,"reason":"NotFound","message":"not found"}}`
	tests := []struct {
		name       string
		args       []string
		wantOut    string
		wantErr    string
		wantDelete []string
	}{
		{
			name:       "by name",
			args:       []string{"delete", "proc", "gamesvc", "-n", "ns-a"},
			wantOut:    "process ns-a/gamesvc deleted\n",
			wantDelete: []string{"DELETE /v1/namespaces/ns-a/processes/gamesvc"},
		},
		{
			name:    "several names, one missing",
			args:    []string{"delete", "process", "gone", "gamesvc"},
			wantOut: "process/gamesvc deleted\n",
			wantErr: "process/gone not found",
			wantDelete: []string{"DELETE /v1/namespaces/defaultGroup/processes/gone",
				"DELETE /v1/namespaces/defaultGroup/processes/gamesvc"},
		},
		{
			// Configmaps and secrets go last: the server refuses them while a workload
			// names them.
			name:    "from files, ignore not found",
			args:    []string{"delete", "-f", dir, "--ignore-not-found"},
			wantOut: "process/gamesvc deleted\nconfigmap ns-a/cfg deleted\n",
			wantDelete: []string{"DELETE /v1/namespaces/defaultGroup/processes/gamesvc",
				"DELETE /v1/namespaces/defaultGroup/services/gone", "DELETE /v1/namespaces/ns-a/configmaps/cfg"},
		},
		{name: "no name", args: []string{"delete", "process"}, wantErr: "at least one NAME"},
		{name: "names and files", args: []string{"delete", "process", "x", "-f", dir}, wantErr: "not both"},
		{name: "bad document", args: []string{"delete", "-f", "-"}, wantErr: "<stdin>: kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, url := newFakeAPI(t)
			api.json("DELETE /v1/namespaces/ns-a/processes/gamesvc", 200, ok("process"))
			api.json("DELETE /v1/namespaces/defaultGroup/processes/gamesvc", 200, ok("process"))
			api.json("DELETE /v1/namespaces/ns-a/configmaps/cfg", 200, ok("configmap"))
			api.json("DELETE /v1/namespaces/defaultGroup/processes/gone", 404, notFound)
			api.json("DELETE /v1/namespaces/defaultGroup/services/gone", 404, notFound)
			r := runCLI(t, url, "kind: nope\nmetadata: {name: x}\n", tt.args...)
			if tt.wantErr == "" && r.err != nil {
				t.Fatal(r.err)
			}
			if tt.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", r.err, tt.wantErr)
			}
			if r.stdout != tt.wantOut {
				t.Errorf("stdout = %q, want %q", r.stdout, tt.wantOut)
			}
			if got := api.got(); strings.Join(got, "\n") != strings.Join(tt.wantDelete, "\n") {
				t.Errorf("requests = %v, want %v", got, tt.wantDelete)
			}
		})
	}
}
