package v4

import (
	"strings"
	"testing"
)

// sourceDoc is a workflow whose process template takes one input artifact, ART.
const sourceDoc = `{"kind":"workflow","metadata":{"name":"w","namespace":"ns"},"spec":{"entrypoint":"p","templates":[` +
	`{"name":"p","inputs":{"artifacts":[ART]},"outputs":{"artifacts":[OUT]},"process":{"procName":"p","startCmd":"true"}}]}}`

func sourceWorkflow(art, out string) string {
	if out == "" {
		out = `{"name":"o","path":"/out"}`
	}
	return strings.NewReplacer("ART", art, "OUT", out).Replace(sourceDoc)
}

func TestWorkflowArtifactSources(t *testing.T) {
	long := strings.Repeat("a", MaxWfRawArtifact+1)
	for _, tc := range []struct {
		name, art, out, field, msg string
	}{
		{"raw", `{"name":"a","path":"/in/a","raw":{"data":"hello"}}`, "", "", ""},
		{"http", `{"name":"a","path":"/in/a","http":{"url":"https://example.com/x.tgz","headers":[{"name":"Accept","value":"*/*"}]}}`, "", "", ""},
		{"git", `{"name":"a","path":"/src","git":{"repo":"https://example.com/r.git","revision":"v1.2","depth":1}}`, "", "", ""},
		{"git over ssh", `{"name":"a","path":"/src","git":{"repo":"ssh://git@example.com/r.git"}}`, "", "", ""},
		{"two sources", `{"name":"a","path":"/in/a","raw":{"data":"x"},"http":{"url":"https://example.com/"}}`, "",
			"spec.templates[0].inputs.artifacts[0]", "at most one of raw, http and git"},
		{"with from", `{"name":"a","path":"/in/a","from":"{{tasks.x.outputs.artifacts.y}}","raw":{"data":"x"}}`, "",
			"spec.templates[0].inputs.artifacts[0].from", "must not be set"},
		{"with repository", `{"name":"a","path":"/in/a","repository":{"key":"k"},"raw":{"data":"x"}}`, "",
			"spec.templates[0].inputs.artifacts[0].repository", "must not be set"},
		{"raw too long", `{"name":"a","path":"/in/a","raw":{"data":"` + long + `"}}`, "",
			"spec.templates[0].inputs.artifacts[0].raw.data", "at most 262144 bytes"},
		{"file url", `{"name":"a","path":"/in/a","http":{"url":"file:///etc/shadow"}}`, "",
			"spec.templates[0].inputs.artifacts[0].http.url", "scheme must be one of http, https"},
		{"no host", `{"name":"a","path":"/in/a","http":{"url":"http:///x"}}`, "",
			"spec.templates[0].inputs.artifacts[0].http.url", "must name a host"},
		{"credentials in url", `{"name":"a","path":"/in/a","http":{"url":"https://u:p@example.com/"}}`, "",
			"spec.templates[0].inputs.artifacts[0].http.url", "no credentials"},
		{"header injection", `{"name":"a","path":"/in/a","http":{"url":"https://example.com/","headers":[{"name":"X","value":"a\r\nHost: evil"}]}}`, "",
			"spec.templates[0].inputs.artifacts[0].http.headers[0].value", "control characters"},
		{"bad header name", `{"name":"a","path":"/in/a","http":{"url":"https://example.com/","headers":[{"name":"X Y","value":"1"}]}}`, "",
			"spec.templates[0].inputs.artifacts[0].http.headers[0].name", "header name"},
		{"git ext transport", `{"name":"a","path":"/src","git":{"repo":"ext::sh -c touch% /tmp/pwned"}}`, "",
			"spec.templates[0].inputs.artifacts[0].git.repo", ""},
		{"git file", `{"name":"a","path":"/src","git":{"repo":"file:///root"}}`, "",
			"spec.templates[0].inputs.artifacts[0].git.repo", "scheme must be one of"},
		{"git option revision", `{"name":"a","path":"/src","git":{"repo":"https://example.com/r","revision":"--upload-pack=touch /tmp/x"}}`, "",
			"spec.templates[0].inputs.artifacts[0].git.revision", "not starting with '-'"},
		{"git negative depth", `{"name":"a","path":"/src","git":{"repo":"https://example.com/r","depth":-1}}`, "",
			"spec.templates[0].inputs.artifacts[0].git.depth", "must be 0 to"},
		{"git host option", `{"name":"a","path":"/src","git":{"repo":"ssh://-oProxyCommand=x/r"}}`, "",
			"spec.templates[0].inputs.artifacts[0].git.repo", "must name a host"},
		{"source on an output", `{"name":"a","path":"/in/a"}`, `{"name":"o","path":"/out","raw":{"data":"x"}}`,
			"spec.templates[0].outputs.artifacts[0]", "not outputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(sourceWorkflow(tc.art, tc.out)))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			errs, _ := err.(FieldErrors)
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Message, tc.msg) {
					return
				}
			}
			t.Errorf("want %s: …%s…, got %v", tc.field, tc.msg, err)
		})
	}
}
