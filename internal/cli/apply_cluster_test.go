package cli

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A stream of priority classes, webhook configurations and namespaced kinds: the
// cluster-wide documents go to their own routes, first, and only the rest to /v1/apply.
func TestApplyRoutesClusterDocuments(t *testing.T) {
	const (
		class   = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n"
		webhook = "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: labels\nwebhooks: []\n"
		process = "kind: process\nmetadata: {name: gamesvc}\nspec: {priorityClassName: high}\n"
		apply   = `{"results":[{"kind":"process","namespace":"defaultGroup","name":"gamesvc","action":"created","resourceVersion":"3"}]}`
	)
	tests := []struct {
		name, stdin string
		classOK     bool
		want        []string // the requests, in order
		wantErr     string
	}{
		{name: "all kinds in one stream", stdin: class + "---\n" + webhook + "---\n" + process, classOK: true,
			want: []string{"GET /v1/priorityclasses/high", "PUT /v1/priorityclasses/high", "GET /v1/admissionwebhooks/labels",
				"PUT /v1/admissionwebhooks/labels", "POST /v1/apply"}},
		{name: "cluster documents only", stdin: class, classOK: true,
			want: []string{"GET /v1/priorityclasses/high", "PUT /v1/priorityclasses/high"}},
		{name: "a refused class sends nothing more", stdin: process + "---\n" + class + "---\n" + webhook,
			want: []string{"GET /v1/priorityclasses/high", "PUT /v1/priorityclasses/high"}, wantErr: "document 2"},
		{name: "no cluster documents", stdin: process,
			want: []string{"POST /v1/apply"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, url := newFakeAPI(t)
			if tt.classOK {
				api.json("PUT /v1/priorityclasses/high", 200, `{"kind":"priorityclass","metadata":{"name":"high"},"value":1000}`)
			} else {
				api.json("PUT /v1/priorityclasses/high", 403, `{"error":{"code":403,"reason":"Forbidden","message":"only administrators"}}`)
			}
			api.json("PUT /v1/admissionwebhooks/labels", 200, `{"kind":"MutatingWebhookConfiguration","metadata":{"name":"labels"}}`)
			api.json("POST /v1/apply", 200, apply)
			r := runCLI(t, url, tt.stdin, "apply", "-f", "-")
			if got := api.got(); !slices.Equal(got, tt.want) {
				t.Errorf("requests %q, want %q", got, tt.want)
			}
			if tt.wantErr != "" {
				if r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr) {
					t.Errorf("err %v, want one naming %q", r.err, tt.wantErr)
				}
				return
			}
			if r.err != nil {
				t.Fatalf("apply: %v\n%s", r.err, r.stderr)
			}
			if slices.Contains(tt.want, "POST /v1/apply") {
				if body := api.body("POST /v1/apply"); strings.Contains(body, "PriorityClass") || strings.Contains(body, "Webhook") || !strings.Contains(body, "gamesvc") {
					t.Errorf("stream %q: want only the process", body)
				}
			}
		})
	}
}

// With -o json, the cluster-wide documents' results are in apply's one answer, before
// the stream's, so the output stays one JSON document.
func TestApplyClusterDocumentsJSONOutput(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("PUT /v1/priorityclasses/high", 200, `{"kind":"priorityclass","metadata":{"name":"high","resourceVersion":"7"},"value":1000}`)
	api.json("POST /v1/apply", 200, `{"results":[{"kind":"process","namespace":"defaultGroup","name":"gamesvc","action":"created","resourceVersion":"8"}]}`)
	r := runCLI(t, url, "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\nkind: process\nmetadata: {name: gamesvc}\n", "apply", "-f", "-", "-o", "json")
	if r.err != nil {
		t.Fatalf("apply: %v\n%s", r.err, r.stderr)
	}
	var out struct {
		Results []v4.ApplyResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, r.stdout)
	}
	if len(out.Results) != 2 || out.Results[0].Kind != v4.KindPriorityClass || out.Results[0].ResourceVersion != "7" ||
		out.Results[1].Name != "gamesvc" {
		t.Errorf("results %+v", out.Results)
	}
}

// A stream the server refuses changes nothing: the cluster-wide documents put before it
// are put back last first, a class as it was and a configuration apply created deleted;
// a configuration changed since apply wrote it is left, and the error says so.
func TestApplyUndoesClusterDocuments(t *testing.T) {
	const (
		class   = "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
		webhook = "kind: admissionwebhook\nmetadata: {name: labels}\nwebhooks: []\n"
		process = "kind: process\nmetadata: {name: gamesvc}\n"
		refused = `{"error":{"code":422,"reason":"Invalid","message":"process gamesvc: spec.instance: must be at least 0"}}`
	)
	api, url := newFakeAPI(t)
	api.json("GET /v1/priorityclasses/high", 200, `{"kind":"priorityclass","metadata":{"name":"high","resourceVersion":"3"},"value":10}`)
	api.json("PUT /v1/priorityclasses/high", 200, `{"kind":"priorityclass","metadata":{"name":"high","resourceVersion":"8"},"value":1000}`)
	api.json("PUT /v1/admissionwebhooks/labels", 201, `{"kind":"admissionwebhook","metadata":{"name":"labels","resourceVersion":"9"}}`)
	api.json("DELETE /v1/admissionwebhooks/labels", 200, `{}`)
	api.json("POST /v1/apply", 422, refused)
	r := runCLI(t, url, class+"---\n"+webhook+"---\n"+process, "apply", "-f", "-")
	want := []string{"GET /v1/priorityclasses/high", "PUT /v1/priorityclasses/high", "GET /v1/admissionwebhooks/labels",
		"PUT /v1/admissionwebhooks/labels", "POST /v1/apply", "DELETE /v1/admissionwebhooks/labels", "PUT /v1/priorityclasses/high"}
	if got := api.got(); !slices.Equal(got, want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	if body := api.body("PUT /v1/priorityclasses/high"); !strings.Contains(body, `"value":10`) {
		t.Errorf("the class was put back as %s, want its value 10", body)
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "spec.instance") || !strings.Contains(r.err.Error(), "2 cluster-wide documents written before were put back") {
		t.Errorf("err %v, want the refusal and that both were put back", r.err)
	}

	// A configuration that existed is put back only as apply left it: here someone
	// changed it since (409), and the error names it.
	api.reset()
	api.json("GET /v1/admissionwebhooks/labels", 200, `{"kind":"admissionwebhook","metadata":{"name":"labels","resourceVersion":"5"},"webhooks":[]}`)
	puts := 0
	api.mu.Lock()
	api.routes["PUT /v1/admissionwebhooks/labels"] = func(w http.ResponseWriter, r *http.Request) {
		if puts++; puts == 1 {
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"kind":"admissionwebhook","metadata":{"name":"labels","resourceVersion":"9"}}`))
			return
		}
		if !strings.Contains(api.body("PUT /v1/admissionwebhooks/labels"), `"resourceVersion":"9"`) {
			t.Errorf("the restore %s is not conditional on the version apply wrote", api.body("PUT /v1/admissionwebhooks/labels"))
		}
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":{"code":409,"reason":"Conflict","message":"admissionwebhook labels changed"}}`))
	}
	api.mu.Unlock()
	api.json("POST /v1/apply", 422, refused)
	r = runCLI(t, url, webhook+"---\n"+process, "apply", "-f", "-")
	if r.err == nil || !strings.Contains(r.err.Error(), "not undone") || !strings.Contains(r.err.Error(), "admissionwebhook/labels") {
		t.Errorf("err %v, want one naming the configuration not undone", r.err)
	}
}
